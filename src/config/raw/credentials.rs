//! The serde mirror of `vault:` and `credentials:`: where secrets come from and where they may go.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::shapes::{BudgetPer, CredentialKind, Duration, HttpUrl, OAuth2Auth, Port, Size, Text};
use super::{Flag, Whole};

/// `vault:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(in crate::config) struct RawVault {
    /// The encrypted file vault.
    #[serde(default)]
    pub(crate) file: RawFileVault,
    /// A HashiCorp Vault / OpenBao server (KV v2).
    pub(crate) openbao: Option<RawOpenBao>,
    /// How long a secret read from the file vault or OpenBao is kept between requests.
    #[schemars(with = "Option<Duration>")]
    pub(crate) cache_ttl: Option<String>,
}

/// `vault.openbao:`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(in crate::config) struct RawOpenBao {
    /// e.g. `https://vault.internal:8200`.
    #[schemars(with = "HttpUrl")]
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
pub(in crate::config) struct RawAppRole {
    /// The role id.
    #[schemars(with = "Text")]
    pub(crate) role_id: String,
    /// The environment variable holding the secret id.
    pub(crate) secret_id_env: String,
    /// Auth mount (default `approle`).
    pub(crate) mount: Option<String>,
}

/// `vault.file:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(in crate::config) struct RawFileVault {
    /// The encrypted file.
    pub(crate) path: Option<String>,
    /// The key file (created 0600 on first use).
    pub(crate) key_file: Option<String>,
    /// Or: an environment variable holding the key (hex).
    pub(crate) key_env: Option<String>,
}

/// One entry of `credentials:`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a credential: a mapping with source, bind and inject"
)]
pub(in crate::config) struct RawCredential {
    /// Where the secret comes from.
    pub(crate) source: Option<RawSource>,
    /// Where it may be sent.
    pub(crate) bind: Option<RawBinding>,
    /// How it is applied.
    pub(crate) inject: Option<RawInject>,
    /// If the upstream echoes the secret back (response headers, text bodies up to 1 MiB), replace it with
    /// the sandbox's placeholder.
    #[serde(default)]
    pub(crate) mask_echo: Flag,
    /// How much each sandbox (or user) may use it per window.
    pub(crate) budget: Option<RawBudget>,
    /// The minting calls (new keys, tokens, passwords) this credential may make, e.g. `sts:AssumeRole`.
    #[serde(default)]
    pub(crate) allow_minting: Vec<String>,
    /// What the credential is for, where cordon cannot tell from its source or hosts: `github` (a GitHub
    /// Enterprise API host), whose minting calls are refused.
    #[schemars(with = "Option<CredentialKind>")]
    pub(crate) kind: Option<String>,
}

/// `budget:` of a credential (or a policy's override).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a budget such as { requests: 1000, window: 1h }")]
pub(in crate::config) struct RawBudget {
    /// Requests it may be applied to per window.
    pub(crate) requests: Option<Whole>,
    /// Bytes (both ways) per window, e.g. `100MiB`.
    #[schemars(with = "Option<Size>")]
    pub(crate) bytes: Option<String>,
    /// The window, e.g. `1h`.
    #[schemars(with = "Option<Duration>")]
    pub(crate) window: Option<String>,
    /// `sandbox` (default) or `user`.
    #[schemars(with = "Option<BudgetPer>")]
    pub(crate) per: Option<String>,
}

/// `source:` of a credential: exactly one of its keys.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
#[schemars(extend("minProperties" = 1, "maxProperties" = 1))]
pub(in crate::config) struct RawSource {
    /// A name in the file vault.
    pub(crate) vault: Option<String>,
    /// An environment variable of cordon's process.
    pub(crate) env: Option<String>,
    /// A `path#key` in the OpenBao KV v2 mount.
    pub(crate) openbao: Option<String>,
    /// A file holding the secret.
    pub(crate) file: Option<String>,
    /// OAuth2 client-credentials tokens.
    pub(crate) oauth2: Option<RawOAuth2>,
    /// GitHub App installation tokens.
    pub(crate) github_app: Option<RawGitHubApp>,
    /// AWS keys, optionally assuming a role.
    pub(crate) aws: Option<RawAws>,
}

/// `source.aws:`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(in crate::config) struct RawAws {
    /// Where the access key id is.
    pub(crate) access_key_id: RawSecretRef,
    /// Where the secret access key is.
    pub(crate) secret_access_key: RawSecretRef,
    /// Where a session token is (keys that are themselves temporary).
    pub(crate) session_token: Option<RawSecretRef>,
    /// Assume a role with these keys.
    pub(crate) assume_role: Option<RawAssumeRole>,
}

/// `source.aws.assume_role:`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(in crate::config) struct RawAssumeRole {
    /// The role's ARN.
    pub(crate) role_arn: String,
    /// `RoleSessionName` (default `cordon`).
    pub(crate) session_name: Option<String>,
    /// Lifetime of the keys, e.g. `1h` (default; 15m to 12h).
    #[schemars(with = "Option<Duration>")]
    pub(crate) duration: Option<String>,
    /// `ExternalId`.
    #[schemars(with = "Option<Text>")]
    pub(crate) external_id: Option<String>,
    /// STS endpoint (default `https://sts.<region>.amazonaws.com`).
    #[schemars(with = "Option<HttpUrl>")]
    pub(crate) endpoint: Option<String>,
    /// Region of the STS endpoint (default `us-east-1`).
    pub(crate) region: Option<String>,
    /// A session policy (an IAM policy document) narrowing the role.
    pub(crate) session_policy: Option<serde_json::Value>,
}

/// A reference to a stored secret (a client secret, a private key, a token): exactly one of its keys.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a secret reference such as { env: VARIABLE }, { vault: NAME }, { file: PATH } or { openbao: PATH#KEY }"
)]
#[schemars(extend("minProperties" = 1, "maxProperties" = 1))]
pub(in crate::config) struct RawSecretRef {
    /// A name in the file vault.
    pub(crate) vault: Option<String>,
    /// A file holding the secret (e.g. a mounted Kubernetes secret).
    pub(crate) file: Option<String>,
    /// An environment variable.
    pub(crate) env: Option<String>,
    /// A `path#key` in OpenBao.
    pub(crate) openbao: Option<String>,
}

/// `source.oauth2:`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(in crate::config) struct RawOAuth2 {
    /// The token endpoint.
    #[schemars(with = "HttpUrl")]
    pub(crate) token_url: String,
    /// The client id.
    #[schemars(with = "Text")]
    pub(crate) client_id: String,
    /// Where the client secret is.
    pub(crate) client_secret: RawSecretRef,
    /// Requested scope.
    pub(crate) scope: Option<String>,
    /// Requested audience.
    pub(crate) audience: Option<String>,
    /// Requested resource (RFC 8707).
    pub(crate) resource: Option<String>,
    /// `basic` (default) or `post`.
    #[schemars(with = "Option<OAuth2Auth>")]
    pub(crate) auth: Option<String>,
}

/// `source.github_app:`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(in crate::config) struct RawGitHubApp {
    /// API base (default https://api.github.com; an Enterprise or test URL otherwise).
    #[schemars(with = "Option<HttpUrl>")]
    pub(crate) api_base: Option<String>,
    /// The App id.
    #[schemars(with = "Text")]
    pub(crate) app_id: String,
    /// The installation id.
    pub(crate) installation_id: Whole,
    /// Where the App's private key (PEM) is.
    pub(crate) private_key: RawSecretRef,
    /// Repositories the token may touch.
    #[serde(default)]
    pub(crate) repositories: Vec<String>,
    /// Permissions, e.g. `{contents: read}`.
    #[serde(default)]
    pub(crate) permissions: BTreeMap<String, String>,
}

/// `bind:` of a credential.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(in crate::config) struct RawBinding {
    /// Host patterns (policy semantics).
    #[serde(default)]
    pub(crate) hosts: Vec<String>,
    /// Ports (default [443]).
    #[schemars(with = "Option<Vec<Port>>")]
    pub(crate) ports: Option<Vec<Whole>>,
    /// Methods (default any).
    pub(crate) methods: Option<Vec<String>>,
    /// Path globs (default any).
    pub(crate) paths: Option<Vec<String>>,
}

/// `inject:` of a credential: a header, Basic auth, or a placeholder.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(in crate::config) struct RawInject {
    /// Header to set.
    pub(crate) header: Option<String>,
    /// Its value, with `{secret}` where the secret goes.
    pub(crate) value: Option<String>,
    /// `Authorization: Basic base64(user:secret)` with this user.
    pub(crate) basic_user: Option<String>,
    /// Swap the sandbox's placeholder for the secret.
    pub(crate) placeholder: Option<RawPlaceholder>,
    /// Check the sandbox's AWS signature and sign again with the real keys.
    pub(crate) aws_sigv4: Option<RawAwsSigV4>,
}

/// `inject.aws_sigv4:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(in crate::config) struct RawAwsSigV4 {
    /// The region (default: from the host).
    pub(crate) region: Option<String>,
    /// The service (default: from the host).
    pub(crate) service: Option<String>,
}

/// `inject.placeholder:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(in crate::config) struct RawPlaceholder {
    /// Also replace it in the query string.
    #[serde(default)]
    pub(crate) query: Flag,
    /// Also replace it in request bodies up to 1 MiB (413 beyond).
    #[serde(default)]
    pub(crate) body: Flag,
}
