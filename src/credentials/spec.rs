//! Credentials as configured: where the secret comes from, where it may go, and how it is applied.

use std::path::PathBuf;

use globset::GlobSet;
use http::{HeaderName, Method};

use crate::policy::HostPattern;
use crate::policy::allowlist::host_matches;
use crate::target::{Host, Target};

/// One configured credential.
#[derive(Debug, Clone)]
pub struct CredentialSpec {
    /// Its name (what audit records and errors say; never the value).
    pub name: String,
    /// Where the secret comes from.
    pub source: SecretSource,
    /// Where it may be sent.
    pub binding: Binding,
    /// How it is applied.
    pub inject: Inject,
}

/// Where a credential's secret comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretSource {
    /// A name in the file vault.
    Vault(String),
    /// An environment variable of cordon's process.
    Env(String),
}

/// The destinations a credential is bound to. Injection happens only on intercepted HTTPS to a destination
/// matching all of these.
#[derive(Debug, Clone)]
pub struct Binding {
    /// Host patterns, as written.
    pub hosts: Vec<HostPattern>,
    /// The compiled host matcher (policy semantics: `*.x` is one or more labels under x).
    pub host_set: GlobSet,
    /// Ports (default 443).
    pub ports: Vec<u16>,
    /// Methods, `None` = any.
    pub methods: Option<Vec<Method>>,
    /// Path globs, `None` = any.
    pub paths: Option<GlobSet>,
}

impl Binding {
    /// Whether a request to `target` with `method` and `path` is one this credential may be sent with.
    pub fn matches(&self, target: &Target, method: &Method, path: &str) -> bool {
        // An IP-literal destination never matches a host binding.
        let Host::Name(name) = &target.host else { return false };
        host_matches(&self.host_set, name)
            && self.ports.contains(&target.port)
            && self.methods.as_ref().is_none_or(|m| m.contains(method))
            && self.paths.as_ref().is_none_or(|p| p.is_match(path))
    }
}

/// How a credential is applied to a request that matches its binding.
#[derive(Debug, Clone)]
pub enum Inject {
    /// Set this header to the template with `{secret}` replaced, replacing whatever the sandbox sent.
    Header {
        /// The header.
        name: HeaderName,
        /// e.g. `Bearer {secret}`.
        template: String,
    },
    /// `Authorization: Basic base64(user:secret)`, replacing whatever the sandbox sent.
    Basic {
        /// The user part.
        user: String,
    },
    /// Replace the sandbox's placeholder with the secret wherever the sandbox put it in headers (and, if
    /// `query`, in the query string).
    Placeholder {
        /// Also in the query string.
        query: bool,
    },
}

/// The file vault's location and key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileVaultSpec {
    /// The encrypted file.
    pub path: PathBuf,
    /// Its key.
    pub key: KeySpec,
}

/// Where the file vault's key is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySpec {
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
