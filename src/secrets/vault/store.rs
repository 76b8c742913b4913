//! What every vault backend is: something that answers "the secret named N", and how it fails.

use std::future::Future;

use http::StatusCode;
use secrecy::SecretString;

use crate::upstream::outbound::HttpError;

/// Why a secret could not be read or written. No message ever contains a secret value or a token.
#[derive(Debug, thiserror::Error)]
pub(crate) enum VaultError {
    /// The secret name is not acceptable for this backend.
    #[error("invalid secret name {name:?}: {rule}")]
    BadName {
        /// The name as given.
        name: String,
        /// What a valid name looks like.
        rule: &'static str,
    },
    /// The vault has no secret under this name.
    #[error("secret {name:?} not found in {vault}")]
    NotFound {
        /// The secret's name.
        name: String,
        /// Which vault (a file, "the environment", an OpenBao URL).
        vault: String,
    },
    /// A file operation failed.
    #[error("cannot {action} {path}: {detail}")]
    Io {
        /// What cordon tried to do ("read", "create", ...).
        action: &'static str,
        /// The file or directory.
        path: String,
        /// The operating system's reason.
        detail: String,
    },
    /// A key file others could read.
    /// A folder of the vault's is not private to cordon (the message says why and what to do).
    #[error("{0}")]
    Folder(String),
    #[error("vault key file {path} is readable or writable by group or others: run `chmod 600 {path}`")]
    KeyPermissions {
        /// The key file.
        path: String,
    },
    /// A vault key that is not 32 bytes of hex.
    #[error("vault key from {source_name} is not usable: {detail}")]
    BadKey {
        /// Where the key came from (a file or an environment variable).
        source_name: String,
        /// What is wrong with it (never the key itself).
        detail: String,
    },
    /// Authenticated decryption failed.
    #[error("cannot decrypt {path}: wrong key or the file is corrupted")]
    Decrypt {
        /// The vault file.
        path: String,
    },
    /// An environment variable that is not set.
    #[error("environment variable {var} is not set")]
    EnvMissing {
        /// The variable's name.
        var: String,
    },
    /// An environment variable whose value is not UTF-8.
    #[error("environment variable {var} is not valid UTF-8")]
    EnvNotUnicode {
        /// The variable's name.
        var: String,
    },
    /// A request to a vault server could not be completed.
    #[error("vault request failed: {0}")]
    Http(#[from] HttpError),
    /// A vault server answered with an unexpected status.
    #[error("{what}: HTTP {status}{detail}")]
    Status {
        /// The request ("OpenBao read of secret/data/cordon/x at http://...").
        what: String,
        /// The status received.
        status: StatusCode,
        /// The server's own error messages, if any.
        detail: String,
    },
    /// A vault server's answer could not be understood.
    #[error("{what}: {detail}")]
    Response {
        /// The request.
        what: String,
        /// What was wrong with the answer (never a value).
        detail: String,
    },
}

/// One trait for every backend.
pub(crate) trait SecretStore: Send + Sync {
    /// The secret named `name` (for OpenBao: "path#key", e.g. "cordon/openai#api_key" under the KV v2 mount).
    fn get(&self, name: &str) -> impl Future<Output = Result<SecretString, VaultError>> + Send;
}
