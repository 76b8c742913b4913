//! TLS: per-sandbox CAs and leaves for the sandbox side, verified connections for the upstream side.

pub mod ca;
pub mod cache;
mod crypto;
pub mod leaf;
pub(crate) mod listener;
pub mod pem;
mod scope;
pub(crate) mod sni;
