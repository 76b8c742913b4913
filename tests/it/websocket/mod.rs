//! WebSockets through interception: frames relayed as they come, message and frame limits, bounded memory.

mod frames;
mod limits;
mod memory;
