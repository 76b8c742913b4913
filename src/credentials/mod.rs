//! Credentials: secrets from vaults, short-lived tokens from issuers, applied at the proxy so that no
//! long-lived secret ever lives inside a sandbox.

pub(crate) mod apply;
pub(crate) mod body;
pub(crate) mod echo;
pub mod placeholder;
pub(crate) mod secrets;
pub(crate) mod source;
pub(crate) mod vault;
