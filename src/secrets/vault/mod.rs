//! Vaults: where cordon reads the long-lived secrets it applies at the proxy. Every backend answers the
//! same question, "the secret named N", through [`SecretStore`].
//!
//! - [`file::FileVault`]: the embedded default, an encrypted file on cordon's own disk.
//! - [`openbao::OpenBao`]: HashiCorp Vault or OpenBao, KV version 2.
//!
//! (Secrets from cordon's own environment and from plain files are read by `crate::secrets`.)
//!
//! Error messages name files, variables, paths and HTTP statuses, never a secret value or a token.

pub(crate) mod file;
pub(crate) mod openbao;
mod store;

pub(crate) use store::{SecretStore, VaultError};

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
