//! Credentials as configured: where the secret comes from, where it may go, and how it is applied.

use std::path::PathBuf;

use globset::GlobSet;
use http::{HeaderName, Method};

use crate::policy::allowlist::host_matches;
use crate::target::{Host, Target};

/// One configured credential.
#[derive(Debug, Clone)]
pub(crate) struct CredentialSpec {
    /// Its name (what audit records and errors say; never the value).
    pub(crate) name: String,
    /// Where the secret comes from.
    pub(crate) source: SecretSource,
    /// Where it may be sent.
    pub(crate) binding: Binding,
    /// How it is applied.
    pub(crate) inject: Inject,
    /// Replace the secret with the sandbox's placeholder where the upstream echoes it back.
    pub(crate) mask_echo: bool,
    /// The minting calls it may make (names from [`super::minting::MINTING`]); every other is refused.
    pub(crate) allow_minting: Vec<&'static str>,
    /// A credential on the GitHub API (a `github_app` source, a host `github.com` or under it, or `kind:
    /// github`): GitHub's minting calls are refused through it.
    pub(crate) github: bool,
}

impl CredentialSpec {
    /// The secrets it reads, each with the key it is written under (`source`, `source.oauth2.client_secret`...).
    pub(crate) fn secret_refs(&self) -> Vec<(&'static str, &SecretRef)> {
        match &self.source {
            SecretSource::Static(r) => vec![("source", r)],
            SecretSource::OAuth2(o) => vec![("source.oauth2.client_secret", &o.client_secret)],
            SecretSource::GitHubApp(g) => vec![("source.github_app.private_key", &g.private_key)],
            SecretSource::Aws(a) => [
                ("source.aws.access_key_id", &a.access_key_id),
                ("source.aws.secret_access_key", &a.secret_access_key),
            ]
            .into_iter()
            .chain(a.session_token.as_ref().map(|t| ("source.aws.session_token", t)))
            .collect(),
        }
    }
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

/// Where a credential's value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SecretSource {
    /// A stored secret, used as it is.
    Static(SecretRef),
    /// OAuth2 client-credentials tokens (RFC 6749 §4.4).
    OAuth2(Box<OAuth2Spec>),
    /// GitHub App installation tokens, narrowed.
    GitHubApp(Box<GitHubAppSpec>),
    /// AWS keys (stored, or short-lived from STS AssumeRole) that cordon signs requests with (SigV4).
    Aws(Box<AwsSpec>),
}

/// AWS credentials: an access key, and optionally a role assumed with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AwsSpec {
    /// The access key id.
    pub(crate) access_key_id: SecretRef,
    /// The secret access key.
    pub(crate) secret_access_key: SecretRef,
    /// A session token, for keys that are themselves temporary.
    pub(crate) session_token: Option<SecretRef>,
    /// Assume this role with the key and sign with the role's short-lived keys.
    pub(crate) assume_role: Option<AssumeRoleSpec>,
}

/// STS AssumeRole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AssumeRoleSpec {
    /// The role's ARN.
    pub(crate) role_arn: String,
    /// `RoleSessionName` (what CloudTrail shows).
    pub(crate) session_name: String,
    /// How long the keys live (900 s to 12 h).
    pub(crate) duration: std::time::Duration,
    /// `ExternalId`, if the role's trust policy asks for one.
    pub(crate) external_id: Option<String>,
    /// The STS endpoint.
    pub(crate) endpoint: http::Uri,
    /// The region STS requests are signed for.
    pub(crate) region: String,
    /// A session policy narrowing the role for every policy that does not set its own (JSON).
    pub(crate) session_policy: Option<String>,
}

/// OAuth2 client credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OAuth2Spec {
    /// Token endpoint.
    pub(crate) token_url: http::Uri,
    /// Client id.
    pub(crate) client_id: String,
    /// Client secret.
    pub(crate) client_secret: SecretRef,
    /// Scope.
    pub(crate) scope: Option<String>,
    /// Audience.
    pub(crate) audience: Option<String>,
    /// Resource.
    pub(crate) resource: Option<String>,
    /// `client_secret_post` instead of Basic.
    pub(crate) post: bool,
}

/// A GitHub App.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GitHubAppSpec {
    /// API base.
    pub(crate) api_base: http::Uri,
    /// App id.
    pub(crate) app_id: String,
    /// Installation id.
    pub(crate) installation_id: u64,
    /// The App's private key.
    pub(crate) private_key: SecretRef,
    /// Repositories the token may touch.
    pub(crate) repositories: Vec<String>,
    /// Permissions.
    pub(crate) permissions: std::collections::BTreeMap<String, String>,
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

/// The destinations a credential is bound to. Injection happens only on intercepted HTTPS to a destination
/// matching all of these.
#[derive(Debug, Clone)]
pub(crate) struct Binding {
    /// The compiled host matcher (policy semantics: `*.x` is one or more labels under x).
    pub(crate) host_set: GlobSet,
    /// Ports (default 443).
    pub(crate) ports: Vec<u16>,
    /// Methods, `None` = any.
    pub(crate) methods: Option<Vec<Method>>,
    /// Path globs, `None` = any.
    pub(crate) paths: Option<GlobSet>,
}

impl Binding {
    /// Whether a request to `target` with `method` and `path` is one this credential may be sent with.
    pub(crate) fn matches(&self, target: &Target, method: &Method, path: &str) -> bool {
        // An IP-literal destination never matches a host binding.
        let Host::Name(name) = &target.host else { return false };
        host_matches(&self.host_set, name)
            && self.ports.contains(&target.port)
            && self.methods.as_ref().is_none_or(|m| m.contains(method))
            && self.paths.as_ref().is_none_or(|p| p.is_match(path))
    }

    /// Whether `host` is one this credential is bound to (at any port, for any method and path).
    pub(crate) fn matches_host(&self, host: &Host) -> bool {
        matches!(host, Host::Name(name) if host_matches(&self.host_set, name))
    }
}

/// How a credential is applied to a request that matches its binding.
#[derive(Debug, Clone)]
pub(crate) enum Inject {
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
        /// Also in request bodies up to 1 MiB (413 beyond).
        body: bool,
    },
    /// AWS Signature Version 4: the sandbox signs with its placeholder keys; cordon checks that signature,
    /// removes it and signs the request again with the real keys.
    AwsSigV4 {
        /// The region to sign for; `None`: read from the host (`service.region.amazonaws.com`).
        region: Option<String>,
        /// The service to sign for (`s3`, `sts`, `bedrock`...); `None`: read from the host.
        service: Option<String>,
    },
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
