//! `vault:`: where stored secrets are kept (the encrypted file vault and its key, an OpenBao server) and how long
//! a secret read from them is kept. As written and validated.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::config::errors::Errors;
use crate::config::fields::url;
use crate::config::shapes;

/// `vault:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(crate) struct RawVault {
    /// The encrypted file vault.
    #[serde(default)]
    pub(crate) file: RawFileVault,
    /// A HashiCorp Vault / OpenBao server (KV v2).
    pub(crate) openbao: Option<RawOpenBao>,
    /// How long a secret read from the file vault or OpenBao is kept between requests.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) cache_ttl: Option<String>,
}

/// `vault.openbao:`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(crate) struct RawOpenBao {
    /// e.g. `https://vault.internal:8200`.
    #[schemars(with = "shapes::HttpUrl")]
    pub(crate) addr: String,
    /// KV v2 mount (default `secret`).
    pub(crate) mount: Option<String>,
    /// Token auth: the environment variable holding the token.
    pub(crate) token_env: Option<String>,
    /// AppRole auth.
    pub(crate) approle: Option<RawAppRole>,
}

/// `vault.openbao.approle:`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(crate) struct RawAppRole {
    /// The role id.
    #[schemars(with = "shapes::Text")]
    pub(crate) role_id: String,
    /// The environment variable holding the secret id.
    pub(crate) secret_id_env: String,
    /// Auth mount (default `approle`).
    pub(crate) mount: Option<String>,
}

/// `vault.file:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(crate) struct RawFileVault {
    /// The encrypted file.
    pub(crate) path: Option<String>,
    /// The key file (created 0600 on first use).
    pub(crate) key_file: Option<String>,
    /// Or: an environment variable holding the key (hex).
    pub(crate) key_env: Option<String>,
}

/// The file vault's location and key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileVaultSpec {
    /// The encrypted file.
    pub(crate) path: PathBuf,
    /// Its key.
    pub(crate) key: KeySpec,
}

/// Where the file vault's key is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KeySpec {
    /// A key file, created 0600 on first use.
    File(PathBuf),
    /// An environment variable holding the key in hex.
    Env(String),
}

impl Default for FileVaultSpec {
    fn default() -> Self {
        FileVaultSpec {
            path: PathBuf::from("vault/cordon.vault"),
            key: KeySpec::File(PathBuf::from("vault/cordon.key")),
        }
    }
}

/// An OpenBao server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OpenBaoSpec {
    /// Address.
    pub(crate) addr: http::Uri,
    /// KV v2 mount.
    pub(crate) mount: String,
    /// Authentication.
    pub(crate) auth: OpenBaoAuthSpec,
}

/// How cordon authenticates to OpenBao.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OpenBaoAuthSpec {
    /// A token in this environment variable.
    TokenEnv(String),
    /// AppRole, with the secret id in an environment variable.
    AppRole {
        /// Role id.
        role_id: String,
        /// Environment variable with the secret id.
        secret_id_env: String,
        /// Auth mount.
        mount: String,
    },
}

/// `vault.file`: the vault file and its key (a key file beside it by default), read against the file's base.
pub(crate) fn vault(errs: &mut Errors, raw: RawVault) -> FileVaultSpec {
    let mut spec = FileVaultSpec::default();
    spec.path = errs.path(&spec.path.to_string_lossy());
    let f = raw.file;
    if let Some(p) = f.path {
        spec.path = errs.path(&p);
    }
    match (f.key_file, f.key_env) {
        (Some(_), Some(_)) => errs.at("vault.file", "has both `key_file` and `key_env`; keep one"),
        (Some(k), None) => spec.key = KeySpec::File(errs.path(&k)),
        (None, Some(v)) => spec.key = KeySpec::Env(v),
        (None, None) => {
            // The key file sits beside the vault file by default.
            let mut key = spec.path.clone();
            key.set_extension("key");
            spec.key = KeySpec::File(key);
        }
    }
    spec
}

/// `vault.openbao`: its address, its mount (`secret` by default) and exactly one way to authenticate.
pub(crate) fn openbao(errs: &mut Errors, raw: Option<RawOpenBao>) -> Option<OpenBaoSpec> {
    let raw = raw?;
    let addr = url(errs, "vault.openbao.addr", &raw.addr)?;
    let auth = match (raw.token_env, raw.approle) {
        (Some(t), None) => OpenBaoAuthSpec::TokenEnv(t),
        (None, Some(a)) => OpenBaoAuthSpec::AppRole {
            role_id: a.role_id,
            secret_id_env: a.secret_id_env,
            mount: a.mount.unwrap_or_else(|| "approle".into()),
        },
        _ => {
            errs.at(
                "vault.openbao",
                "needs exactly one of `token_env: VARIABLE` or `approle: {role_id, secret_id_env}`",
            );
            return None;
        }
    };
    Some(OpenBaoSpec {
        addr,
        mount: raw.mount.unwrap_or_else(|| "secret".into()),
        auth,
    })
}
