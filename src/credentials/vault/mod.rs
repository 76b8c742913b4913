//! Vaults: where cordon reads the long-lived secrets it applies at the proxy. Every backend answers the
//! same question, "the secret named N", through [`SecretStore`]; [`Vault`] dispatches on configuration.
//!
//! - [`file::FileVault`]: the embedded default, an encrypted file on cordon's own disk.
//! - [`env::EnvVault`]: cordon's own environment variables.
//! - [`openbao::OpenBao`]: HashiCorp Vault or OpenBao, KV version 2.
//!
//! Error messages name files, variables, paths and HTTP statuses, never a secret value or a token.

pub use secrecy::{ExposeSecret, SecretString};

pub mod env;
pub mod file;
pub mod openbao;
mod store;

pub use store::{SecretStore, VaultError};

/// Every backend, for config-driven dispatch (no dyn needed).
pub enum Vault {
    /// The encrypted file vault.
    File(file::FileVault),
    /// cordon's own environment.
    Env(env::EnvVault),
    /// An OpenBao or HashiCorp Vault server.
    OpenBao(openbao::OpenBao),
}

impl SecretStore for Vault {
    async fn get(&self, name: &str) -> Result<SecretString, VaultError> {
        match self {
            Vault::File(v) => v.get(name).await,
            Vault::Env(v) => v.get(name).await,
            Vault::OpenBao(v) => v.get(name).await,
        }
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
