//! A reference to a stored secret (a client secret, a private key, a token) wherever the file names one: exactly
//! one of the file vault, an environment variable, OpenBao or a file. As written and validated.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::config::errors::Errors;

/// A reference to a stored secret (a client secret, a private key, a token): exactly one of its keys.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a secret reference such as { env: VARIABLE }, { vault: NAME }, { file: PATH } or { openbao: PATH#KEY }"
)]
#[schemars(extend("minProperties" = 1, "maxProperties" = 1))]
pub(crate) struct RawSecretRef {
    /// A name in the file vault.
    pub(crate) vault: Option<String>,
    /// A file holding the secret (e.g. a mounted Kubernetes secret).
    pub(crate) file: Option<String>,
    /// An environment variable.
    pub(crate) env: Option<String>,
    /// A `path#key` in OpenBao.
    pub(crate) openbao: Option<String>,
}

/// Where a stored secret is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SecretRef {
    /// A name in the file vault.
    Vault(String),
    /// An environment variable of cordon's process.
    Env(String),
    /// A `path#key` in OpenBao.
    OpenBao(String),
    /// A file holding the secret (trailing newline ignored).
    File(PathBuf),
}

/// A secret reference at `path`: exactly one source, a file read against the file's base.
pub(crate) fn secret_ref(errs: &mut Errors, path: &str, raw: RawSecretRef) -> Option<SecretRef> {
    match (raw.vault, raw.env, raw.openbao, raw.file) {
        (Some(v), None, None, None) => Some(SecretRef::Vault(v)),
        (None, Some(e), None, None) => Some(SecretRef::Env(e)),
        (None, None, Some(b), None) => Some(SecretRef::OpenBao(b)),
        (None, None, None, Some(f)) if !f.trim().is_empty() => Some(SecretRef::File(errs.path(&f))),
        _ => {
            errs.at(
                path,
                "needs exactly one of `vault: NAME`, `env: VARIABLE`, `openbao: PATH#KEY` or `file: PATH`",
            );
            None
        }
    }
}
