//! TLS: per-sandbox CAs and leaves for the sandbox side, verified connections for the upstream side.

pub mod ca;
mod ca_error;
mod ca_files;
mod ca_shared;
pub mod cache;
pub mod cas;
mod crypto;
pub mod leaf;
pub(crate) mod listener;
pub mod pem;
mod sandbox_ca;
mod scope;
pub(crate) mod sni;
