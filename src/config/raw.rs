//! The serde mirror of the YAML file: every key a user may write, nothing else.
//!
//! Values stay close to what was written (strings for durations, sizes, hosts and CIDRs, wide integers for
//! ports) so that `validate.rs` can say precisely what is wrong with a value instead of serde saying
//! "invalid type". Unknown keys are rejected here, with the parser's line and column.

use std::collections::BTreeMap;

use serde::Deserialize;

mod audit;
mod console;
mod credentials;
mod jail;
mod policies;
mod previews;
mod principals;
mod scalars;

pub(super) use audit::*;
pub(super) use console::*;
pub(super) use credentials::*;
pub(super) use jail::*;
pub(super) use policies::*;
pub(super) use previews::*;
pub(super) use principals::*;
pub(super) use scalars::{Flag, Whole};

/// The whole file.
#[derive(Debug, Default, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping of settings (listen:, policies:, sandboxes:...)"
)]
pub(super) struct RawConfig {
    /// Where cordon listens.
    #[serde(default)]
    pub(crate) listen: RawListen,
    /// Where audit records go.
    #[serde(default)]
    pub(crate) audit: RawAudit,
    /// Address guard settings.
    #[serde(default)]
    pub(crate) network: RawNetwork,
    /// Timeouts.
    #[serde(default)]
    pub(crate) timeouts: RawTimeouts,
    /// Caps.
    #[serde(default)]
    pub(crate) limits: RawLimits,
    /// Per-sandbox certificate authorities.
    #[serde(default)]
    pub(crate) ca: RawCa,
    /// cordon's own connections to upstreams.
    #[serde(default)]
    pub(crate) upstream: RawUpstream,
    /// Where secrets come from.
    #[serde(default)]
    pub(crate) vault: RawVault,
    /// Named credentials.
    #[serde(default)]
    pub(crate) credentials: BTreeMap<String, RawCredential>,
    /// The sandboxes cordon knows.
    #[serde(default)]
    pub(crate) sandboxes: Vec<RawSandbox>,
    /// Named policies.
    #[serde(default)]
    pub(crate) policies: BTreeMap<String, RawPolicy>,
    /// The control plane: admin API, run-time sandboxes, reload.
    #[serde(default)]
    pub(crate) control: RawControl,
    /// Human approval of `action: ask` rules.
    #[serde(default)]
    pub(crate) approval: RawApproval,
    /// Operational logs.
    #[serde(default)]
    pub(crate) log: RawLog,
    /// Preview URLs into sandboxes.
    pub(crate) previews: Option<RawPreviews>,
    /// The admin listener's TLS.
    pub(crate) admin: Option<RawAdmin>,
    /// The approval inbox in the browser, and how people sign in to it.
    pub(crate) console: Option<RawConsole>,
    /// What bounds every jail, and how a jail is stopped.
    pub(crate) jail: Option<RawJail>,
}

/// `log:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawLog {
    /// `text` (default) or `json`.
    pub(crate) format: Option<String>,
}

/// `approval:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawApproval {
    /// How long a request waits for a decision.
    pub(crate) timeout: Option<String>,
    /// Requests waiting at once.
    pub(crate) max_pending: Option<Whole>,
    /// Requests of one sandbox waiting at once.
    pub(crate) max_pending_per_sandbox: Option<Whole>,
    /// Requests of one user's sandboxes waiting at once.
    pub(crate) max_pending_per_user: Option<Whole>,
    /// Where pending approvals are announced.
    pub(crate) webhook: Option<RawWebhook>,
}

/// `approval.webhook:`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawWebhook {
    /// The URL POSTed to.
    pub(crate) url: String,
    /// The HMAC key of the signature header.
    pub(crate) secret: Option<RawSecretRef>,
}

/// A rate: `{ per_second: 50, burst: 100 }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a rate such as { per_second: 50, burst: 100 }")]
pub(super) struct RawRate {
    /// Sustained rate.
    pub(crate) per_second: Whole,
    /// At once (default: `per_second`).
    pub(crate) burst: Option<Whole>,
}

/// `limits.per_sandbox:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawSandboxLimits {
    /// Requests (and CONNECTs) per second.
    pub(crate) requests: Option<RawRate>,
    /// Requests per second to one host.
    pub(crate) per_host: Option<RawRate>,
    /// New connections and tunnels per second.
    pub(crate) connections: Option<RawRate>,
    /// Open connections plus tunnels.
    pub(crate) max_open: Option<Whole>,
    /// Upload bytes per `budget_window`.
    pub(crate) upload: Option<String>,
    /// Download bytes per `budget_window`.
    pub(crate) download: Option<String>,
    /// The byte budgets' window.
    pub(crate) budget_window: Option<String>,
}

/// `limits.per_user:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawUserLimits {
    /// Requests per second over all the user's sandboxes.
    pub(crate) requests: Option<RawRate>,
    /// Open connections plus tunnels over all the user's sandboxes.
    pub(crate) max_open: Option<Whole>,
    /// Jails the user may run at once on this host.
    pub(crate) jails: Option<Whole>,
}

/// `control:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawControl {
    /// The admin API's bearer token (principal `admin`, role `admin`).
    pub(crate) admin_token: Option<RawSecretRef>,
    /// Named admin tokens with their roles.
    pub(crate) admin_tokens: Option<Vec<RawAdminToken>>,
    /// The key that signs run-time sandboxes' proxy credentials.
    pub(crate) signing_key: Option<RawSecretRef>,
    /// The sandbox store: a SQLite file, or a `postgres://` DSN.
    pub(crate) store: Option<String>,
    /// The PostgreSQL password (a secret reference), for a `postgres://` store.
    pub(crate) store_password: Option<RawSecretRef>,
    /// PEM roots that sign the PostgreSQL server's certificate.
    pub(crate) store_ca_file: Option<String>,
    /// The key that encrypts the CAs' keys kept in PostgreSQL (a secret reference).
    pub(crate) store_key: Option<RawSecretRef>,
    /// Lifetime of a run-time sandbox when the request names none.
    pub(crate) default_ttl: Option<String>,
    /// The longest lifetime a request may ask for.
    pub(crate) max_ttl: Option<String>,
    /// The proxy URL sandboxes are told to use.
    pub(crate) proxy_url: Option<String>,
    /// `NO_PROXY` entries handed to sandboxes.
    pub(crate) no_proxy: Option<Vec<String>>,
    /// Where a sandbox finds its CA certificate (the path in its own file system).
    pub(crate) ca_file: Option<String>,
    /// Reload when the configuration file changes.
    pub(crate) watch: Option<Flag>,
}

/// `listen:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawListen {
    /// Explicit proxy listener, `host:port`.
    pub(crate) proxy: Option<String>,
    /// Admin API listener, `host:port`.
    pub(crate) admin: Option<String>,
    /// Transparent listener (REDIRECT / TPROXY), `host:port`.
    pub(crate) transparent: Option<String>,
    /// Set `IP_TRANSPARENT` on the transparent listener, for TPROXY rules.
    pub(crate) transparent_tproxy: Option<Flag>,
    /// DNS responder (UDP and TCP), `host:port`.
    pub(crate) dns: Option<String>,
    /// Preview listener (HTTPS, or HTTP on loopback), `host:port`.
    pub(crate) preview: Option<String>,
    /// The console's own listener (HTTPS, or HTTP on loopback), `host:port`; else it is on the admin listener.
    pub(crate) console: Option<String>,
}

/// `network:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawNetwork {
    /// CIDRs exempted from the special-range guard.
    #[serde(default)]
    pub(crate) allow_cidrs: Vec<String>,
    /// Metadata addresses an operator explicitly opts in to reaching.
    #[serde(default)]
    pub(crate) dangerous_allow_metadata: Vec<String>,
    /// Static name -> address(es) overrides.
    #[serde(default)]
    pub(crate) hosts: BTreeMap<String, RawAddrs>,
    /// `dns` (default) or `system`.
    #[serde(default)]
    pub(crate) resolver: Option<String>,
}

/// One address or a list of them.
#[derive(Debug, Deserialize)]
#[serde(untagged, expecting = "expected an IP address or a list of them")]
pub(super) enum RawAddrs {
    /// `name: 10.0.0.1`
    One(String),
    /// `name: [10.0.0.1, 10.0.0.2]`
    Many(Vec<String>),
}

/// `timeouts:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawTimeouts {
    /// Dialling the upstream.
    pub(crate) connect: Option<String>,
    /// Receiving a complete request head from the client.
    pub(crate) request_headers: Option<String>,
    /// Receiving the first request head of a connection.
    pub(crate) first_request_headers: Option<String>,
    /// Waiting for the upstream's response head.
    pub(crate) upstream_headers: Option<String>,
    /// Draining in-flight work on shutdown.
    pub(crate) drain: Option<String>,
    /// A TLS handshake, with the client or with the upstream.
    pub(crate) tls_handshake: Option<String>,
    /// A tunnel with no bytes either way.
    pub(crate) idle: Option<String>,
    /// The longest a tunnel may stay open.
    pub(crate) tunnel_max: Option<String>,
}

/// `limits:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawLimits {
    /// Open client connections at once.
    pub(crate) max_connections: Option<Whole>,
    /// Request line plus headers.
    pub(crate) max_request_header_bytes: Option<String>,
    /// Per-sandbox rates, caps and byte budgets.
    pub(crate) per_sandbox: Option<RawSandboxLimits>,
    /// Per-user rates and caps.
    pub(crate) per_user: Option<RawUserLimits>,
    /// Failed proxy authentications per (source address, claimed sandbox id).
    pub(crate) auth_failures: Option<RawRate>,
    /// Per source address, before a sandbox is known.
    pub(crate) per_source: Option<RawSourceLimits>,
    /// The largest WebSocket message relayed, either way.
    pub(crate) websocket_message: Option<String>,
    /// The largest WebSocket frame relayed, either way.
    pub(crate) websocket_frame: Option<String>,
}

/// `limits.per_source:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawSourceLimits {
    /// Connections from one address that have not authenticated yet.
    pub(crate) unauthenticated: Option<Whole>,
    /// Failed proxy authentications from one address, whatever sandbox they name.
    pub(crate) auth_failures: Option<RawRate>,
}

/// `ca:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawCa {
    /// Folder holding one sub-folder per sandbox.
    pub(crate) dir: Option<String>,
    /// Lifetime of minted leaf certificates.
    pub(crate) leaf_validity: Option<String>,
    /// Leaf certificates kept ready.
    pub(crate) leaf_cache: Option<Whole>,
}

/// `upstream:`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawUpstream {
    /// PEM files of CAs trusted besides the built-in roots.
    #[serde(default)]
    pub(crate) extra_roots: Vec<String>,
    /// How long an idle pooled upstream connection is kept.
    pub(crate) pool_idle: Option<String>,
}

/// One entry of `sandboxes:`.
#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a sandbox: a mapping with id, user, policy and token_sha256 or source_cidrs"
)]
pub(super) struct RawSandbox {
    /// Sandbox id.
    pub(crate) id: Option<String>,
    /// Owning user.
    pub(crate) user: Option<String>,
    /// Hex SHA-256 of the sandbox's proxy token.
    pub(crate) token_sha256: Option<String>,
    /// Source ranges that identify this sandbox without a token.
    #[serde(default)]
    pub(crate) source_cidrs: Vec<String>,
    /// Name of the policy.
    pub(crate) policy: Option<String>,
}
