//! The serde mirror of the YAML file: every key a user may write, nothing else.
//!
//! Values stay close to what was written (strings for durations, sizes, hosts and CIDRs, wide integers for
//! ports) so that `validate.rs` can say precisely what is wrong with a value instead of serde saying
//! "invalid type". Unknown keys are rejected here, with the parser's line and column.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The whole file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    /// Where cordon listens.
    #[serde(default)]
    pub listen: RawListen,
    /// Where audit records go.
    #[serde(default)]
    pub audit: RawAudit,
    /// Address guard settings.
    #[serde(default)]
    pub network: RawNetwork,
    /// Timeouts.
    #[serde(default)]
    pub timeouts: RawTimeouts,
    /// Caps.
    #[serde(default)]
    pub limits: RawLimits,
    /// Per-sandbox certificate authorities.
    #[serde(default)]
    pub ca: RawCa,
    /// cordon's own connections to upstreams.
    #[serde(default)]
    pub upstream: RawUpstream,
    /// Where secrets come from.
    #[serde(default)]
    pub vault: RawVault,
    /// Named credentials.
    #[serde(default)]
    pub credentials: BTreeMap<String, RawCredential>,
    /// The sandboxes cordon knows.
    #[serde(default)]
    pub sandboxes: Vec<RawSandbox>,
    /// Named policies.
    #[serde(default)]
    pub policies: BTreeMap<String, RawPolicy>,
    /// The control plane: admin API, run-time sandboxes, reload.
    #[serde(default)]
    pub control: RawControl,
    /// Human approval of `action: ask` rules.
    #[serde(default)]
    pub approval: RawApproval,
}

/// `approval:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawApproval {
    /// How long a request waits for a decision.
    pub timeout: Option<String>,
    /// Requests waiting at once.
    pub max_pending: Option<i64>,
    /// Where pending approvals are announced.
    pub webhook: Option<RawWebhook>,
}

/// `approval.webhook:`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWebhook {
    /// The URL POSTed to.
    pub url: String,
    /// The HMAC key of the signature header.
    pub secret: Option<RawSecretRef>,
}

/// A rate: `{ per_second: 50, burst: 100 }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRate {
    /// Sustained rate.
    pub per_second: i64,
    /// At once (default: `per_second`).
    pub burst: Option<i64>,
}

/// `limits.per_sandbox:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSandboxLimits {
    /// Requests (and CONNECTs) per second.
    pub requests: Option<RawRate>,
    /// Requests per second to one host.
    pub per_host: Option<RawRate>,
    /// New connections and tunnels per second.
    pub connections: Option<RawRate>,
    /// Open connections plus tunnels.
    pub max_open: Option<i64>,
    /// Upload bytes per `budget_window`.
    pub upload: Option<String>,
    /// Download bytes per `budget_window`.
    pub download: Option<String>,
    /// The byte budgets' window.
    pub budget_window: Option<String>,
}

/// `limits.per_user:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawUserLimits {
    /// Requests per second over all the user's sandboxes.
    pub requests: Option<RawRate>,
    /// Open connections plus tunnels over all the user's sandboxes.
    pub max_open: Option<i64>,
}

/// `control:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawControl {
    /// The admin API's bearer token.
    pub admin_token: Option<RawSecretRef>,
    /// The key that signs run-time sandboxes' proxy credentials.
    pub signing_key: Option<RawSecretRef>,
    /// The sandbox store (a file).
    pub store: Option<String>,
    /// Lifetime of a run-time sandbox when the request names none.
    pub default_ttl: Option<String>,
    /// The longest lifetime a request may ask for.
    pub max_ttl: Option<String>,
    /// The proxy URL sandboxes are told to use.
    pub proxy_url: Option<String>,
    /// `NO_PROXY` entries handed to sandboxes.
    pub no_proxy: Option<Vec<String>>,
    /// Where a sandbox finds its CA certificate (the path in its own file system).
    pub ca_file: Option<String>,
    /// Reload when the configuration file changes.
    pub watch: Option<bool>,
}

/// `listen:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawListen {
    /// Explicit proxy listener, `host:port`.
    pub proxy: Option<String>,
    /// Admin API listener, `host:port`.
    pub admin: Option<String>,
    /// Transparent listener (REDIRECT / TPROXY), `host:port`.
    pub transparent: Option<String>,
    /// Set `IP_TRANSPARENT` on the transparent listener, for TPROXY rules.
    pub transparent_tproxy: Option<bool>,
    /// DNS responder (UDP and TCP), `host:port`.
    pub dns: Option<String>,
}

/// `audit:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAudit {
    /// `-` for stdout, or a file path (appended to).
    pub path: Option<String>,
}

/// `network:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNetwork {
    /// CIDRs exempted from the special-range guard.
    #[serde(default)]
    pub allow_cidrs: Vec<String>,
    /// Metadata addresses an operator explicitly opts in to reaching.
    #[serde(default)]
    pub dangerous_allow_metadata: Vec<String>,
    /// Static name -> address(es) overrides.
    #[serde(default)]
    pub hosts: BTreeMap<String, RawAddrs>,
}

/// One address or a list of them.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum RawAddrs {
    /// `name: 10.0.0.1`
    One(String),
    /// `name: [10.0.0.1, 10.0.0.2]`
    Many(Vec<String>),
}

/// `timeouts:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTimeouts {
    /// Dialling the upstream.
    pub connect: Option<String>,
    /// Receiving a complete request head from the client.
    pub request_headers: Option<String>,
    /// Waiting for the upstream's response head.
    pub upstream_headers: Option<String>,
    /// Draining in-flight work on shutdown.
    pub drain: Option<String>,
    /// A TLS handshake, with the client or with the upstream.
    pub tls_handshake: Option<String>,
    /// A tunnel with no bytes either way.
    pub idle: Option<String>,
    /// The longest a tunnel may stay open.
    pub tunnel_max: Option<String>,
}

/// `limits:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLimits {
    /// Open client connections at once.
    pub max_connections: Option<i64>,
    /// Request line plus headers.
    pub max_request_header_bytes: Option<String>,
    /// Per-sandbox rates, caps and byte budgets.
    pub per_sandbox: Option<RawSandboxLimits>,
    /// Per-user rates and caps.
    pub per_user: Option<RawUserLimits>,
    /// Failed proxy authentications per source address.
    pub auth_failures: Option<RawRate>,
}

/// `ca:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCa {
    /// Folder holding one sub-folder per sandbox.
    pub dir: Option<String>,
    /// Lifetime of minted leaf certificates.
    pub leaf_validity: Option<String>,
    /// Leaf certificates kept ready.
    pub leaf_cache: Option<i64>,
}

/// `upstream:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawUpstream {
    /// PEM files of CAs trusted besides the built-in roots.
    #[serde(default)]
    pub extra_roots: Vec<String>,
    /// How long an idle pooled upstream connection is kept.
    pub pool_idle: Option<String>,
}

/// One entry of `sandboxes:`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSandbox {
    /// Sandbox id.
    pub id: Option<String>,
    /// Owning user.
    pub user: Option<String>,
    /// Hex SHA-256 of the sandbox's proxy token.
    pub token_sha256: Option<String>,
    /// Source ranges that identify this sandbox without a token.
    #[serde(default)]
    pub source_cidrs: Vec<String>,
    /// Name of the policy.
    pub policy: Option<String>,
}

/// One entry of `policies:`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPolicy {
    /// `enforce` (default) or `report`.
    pub mode: Option<String>,
    /// Ordered allow rules.
    #[serde(default)]
    pub allow: Vec<RawRule>,
    /// Credentials sandboxes of this policy may use.
    #[serde(default)]
    pub credentials: Vec<String>,
    /// Per-credential narrowing for this policy's sandboxes (OAuth2 scope/audience/resource, GitHub App
    /// repositories/permissions).
    #[serde(default)]
    pub credential_scope: BTreeMap<String, RawScope>,
}

/// One entry of `credential_scope:`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScope {
    /// OAuth2 scope.
    pub scope: Option<String>,
    /// OAuth2 audience.
    pub audience: Option<String>,
    /// OAuth2 resource.
    pub resource: Option<String>,
    /// GitHub App repositories.
    pub repositories: Option<Vec<String>>,
    /// GitHub App permissions.
    pub permissions: Option<BTreeMap<String, String>>,
}

/// `vault:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVault {
    /// The encrypted file vault.
    #[serde(default)]
    pub file: RawFileVault,
    /// A HashiCorp Vault / OpenBao server (KV v2).
    pub openbao: Option<RawOpenBao>,
}

/// `vault.openbao:`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOpenBao {
    /// e.g. `https://vault.internal:8200`.
    pub addr: String,
    /// KV v2 mount (default `secret`).
    pub mount: Option<String>,
    /// Token auth: the environment variable holding the token.
    pub token_env: Option<String>,
    /// AppRole auth.
    pub approle: Option<RawAppRole>,
}

/// `vault.openbao.approle:`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAppRole {
    /// The role id.
    pub role_id: String,
    /// The environment variable holding the secret id.
    pub secret_id_env: String,
    /// Auth mount (default `approle`).
    pub mount: Option<String>,
}

/// `vault.file:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFileVault {
    /// The encrypted file.
    pub path: Option<String>,
    /// The key file (created 0600 on first use).
    pub key_file: Option<String>,
    /// Or: an environment variable holding the key (hex).
    pub key_env: Option<String>,
}

/// One entry of `credentials:`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCredential {
    /// Where the secret comes from.
    pub source: Option<RawSource>,
    /// Where it may be sent.
    pub bind: Option<RawBinding>,
    /// How it is applied.
    pub inject: Option<RawInject>,
    /// If the upstream echoes the secret back (response headers, text bodies up to 1 MiB), replace it with
    /// the sandbox's placeholder.
    #[serde(default)]
    pub mask_echo: bool,
}

/// `source:` of a credential: exactly one key.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSource {
    /// A name in the file vault.
    pub vault: Option<String>,
    /// An environment variable of cordon's process.
    pub env: Option<String>,
    /// A `path#key` in the OpenBao KV v2 mount.
    pub openbao: Option<String>,
    /// A file holding the secret.
    pub file: Option<String>,
    /// OAuth2 client-credentials tokens.
    pub oauth2: Option<RawOAuth2>,
    /// GitHub App installation tokens.
    pub github_app: Option<RawGitHubApp>,
}

/// A reference to a stored secret (for a client secret or a private key).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSecretRef {
    /// A name in the file vault.
    pub vault: Option<String>,
    /// A file holding the secret (e.g. a mounted Kubernetes secret).
    pub file: Option<String>,
    /// An environment variable.
    pub env: Option<String>,
    /// A `path#key` in OpenBao.
    pub openbao: Option<String>,
}

/// `source.oauth2:`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOAuth2 {
    /// The token endpoint.
    pub token_url: String,
    /// The client id.
    pub client_id: String,
    /// Where the client secret is.
    pub client_secret: RawSecretRef,
    /// Requested scope.
    pub scope: Option<String>,
    /// Requested audience.
    pub audience: Option<String>,
    /// Requested resource (RFC 8707).
    pub resource: Option<String>,
    /// `basic` (default) or `post`.
    pub auth: Option<String>,
}

/// `source.github_app:`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGitHubApp {
    /// API base (default https://api.github.com; an Enterprise or test URL otherwise).
    pub api_base: Option<String>,
    /// The App id.
    pub app_id: String,
    /// The installation id.
    pub installation_id: u64,
    /// Where the App's private key (PEM) is.
    pub private_key: RawSecretRef,
    /// Repositories the token may touch.
    #[serde(default)]
    pub repositories: Vec<String>,
    /// Permissions, e.g. `{contents: read}`.
    #[serde(default)]
    pub permissions: BTreeMap<String, String>,
}

/// `bind:` of a credential.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBinding {
    /// Host patterns (policy semantics).
    #[serde(default)]
    pub hosts: Vec<String>,
    /// Ports (default [443]).
    pub ports: Option<Vec<i64>>,
    /// Methods (default any).
    pub methods: Option<Vec<String>>,
    /// Path globs (default any).
    pub paths: Option<Vec<String>>,
}

/// `inject:` of a credential: a header, Basic auth, or a placeholder.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawInject {
    /// Header to set.
    pub header: Option<String>,
    /// Its value, with `{secret}` where the secret goes.
    pub value: Option<String>,
    /// `Authorization: Basic base64(user:secret)` with this user.
    pub basic_user: Option<String>,
    /// Swap the sandbox's placeholder for the secret.
    pub placeholder: Option<RawPlaceholder>,
}

/// `inject.placeholder:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPlaceholder {
    /// Also replace it in the query string.
    #[serde(default)]
    pub query: bool,
    /// Also replace it in request bodies up to 1 MiB (413 beyond).
    #[serde(default)]
    pub body: bool,
}

/// One allow rule.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRule {
    /// Exact host or `*.suffix`.
    pub host: Option<String>,
    /// CIDRs for IP-literal destinations.
    pub cidrs: Option<Vec<String>>,
    /// Allowed ports.
    pub ports: Option<Vec<i64>>,
    /// Allowed methods.
    pub methods: Option<Vec<String>>,
    /// Allowed path globs.
    pub paths: Option<Vec<String>>,
    /// `intercept` (default) or `tunnel`.
    pub tls: Option<String>,
    /// `allow` (default) or `ask` (hold for a human's approval).
    pub action: Option<String>,
}
