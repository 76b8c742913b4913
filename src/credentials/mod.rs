//! Credentials: secrets from vaults, short-lived tokens from issuers, applied at the proxy so that no
//! long-lived secret ever lives inside a sandbox.

pub mod apply;
pub mod body;
pub mod echo;
pub mod placeholder;
pub mod secrets;
pub mod source;
pub mod spec;
pub mod vault;
