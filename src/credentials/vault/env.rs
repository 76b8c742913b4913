//! Secrets from cordon's own environment: `get("OPENAI_API_KEY")` reads that variable.

use secrecy::SecretString;
use secrecy::zeroize::Zeroize;

use super::store::{SecretStore, VaultError};

/// Reads secrets from cordon's own environment variables (the variable's name is the secret's name).
#[derive(Debug, Clone, Copy, Default)]
pub struct EnvVault;

impl EnvVault {
    /// The environment vault.
    pub fn new() -> EnvVault {
        EnvVault
    }

    fn read(name: &str) -> Result<SecretString, VaultError> {
        if name.is_empty() || name.contains(['=', '\0']) {
            return Err(VaultError::BadName {
                name: name.to_owned(),
                rule: "an environment variable name is non-empty and has no '=' or NUL",
            });
        }
        match std::env::var(name) {
            Ok(mut value) => {
                let secret = SecretString::from(value.as_str());
                value.zeroize();
                Ok(secret)
            }
            Err(std::env::VarError::NotPresent) => Err(VaultError::EnvMissing { var: name.to_owned() }),
            Err(std::env::VarError::NotUnicode(_)) => Err(VaultError::EnvNotUnicode { var: name.to_owned() }),
        }
    }
}

impl SecretStore for EnvVault {
    async fn get(&self, name: &str) -> Result<SecretString, VaultError> {
        EnvVault::read(name)
    }
}

#[cfg(test)]
#[path = "env_tests.rs"]
mod tests;
