//! TLS: per-sandbox CAs and leaves for the sandbox side, verified connections for the upstream side.

pub mod ca;
pub mod cache;
pub mod leaf;
pub mod sni;
pub mod upstream;
