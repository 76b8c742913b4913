//! cordon's own connections out: the pooled, verified client every policed request is sent through, and the
//! outbound client that credential sources and the approval webhook use.

pub mod outbound;
pub mod pool;
pub mod send;
