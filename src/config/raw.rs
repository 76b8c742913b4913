//! The serde mirror of the YAML file: every key a user may write, nothing else.
//!
//! Values stay close to what was written (strings for durations, sizes, hosts and CIDRs, wide integers for
//! ports) so that `validate.rs` can say precisely what is wrong with a value instead of serde saying
//! "invalid type". Unknown keys are rejected here, with the parser's line and column. The same types derive the
//! JSON Schema of the file (`../schema.rs`), with `shapes.rs` saying what the values kept as text look like.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use shapes::{Cidr, Duration, HostPort, HttpUrl, IpAddress, LogFormat, Resolver, Sha256, Size, Text};

mod audit;
mod console;
mod credentials;
mod jail;
mod policies;
mod previews;
mod principals;
mod scalars;
mod shapes;

pub(super) use audit::*;
pub(super) use console::*;
pub(super) use credentials::*;
pub(super) use jail::*;
pub(super) use policies::*;
pub(super) use previews::*;
pub(super) use principals::*;
pub(super) use scalars::{Flag, Whole};

/// The whole file.
#[derive(Debug, Default, Deserialize, JsonSchema)]
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
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawLog {
    /// `text` (default) or `json`.
    #[schemars(with = "Option<LogFormat>")]
    pub(crate) format: Option<String>,
}

/// `approval:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawApproval {
    /// How long a request waits for a decision.
    #[schemars(with = "Option<Duration>")]
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
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawWebhook {
    /// The URL POSTed to.
    #[schemars(with = "HttpUrl")]
    pub(crate) url: String,
    /// The HMAC key of the signature header.
    pub(crate) secret: Option<RawSecretRef>,
}

/// A rate: `{ per_second: 50, burst: 100 }`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a rate such as { per_second: 50, burst: 100 }")]
pub(super) struct RawRate {
    /// Sustained rate.
    pub(crate) per_second: Whole,
    /// At once (default: `per_second`).
    pub(crate) burst: Option<Whole>,
}

/// `limits.per_sandbox:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
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
    #[schemars(with = "Option<Size>")]
    pub(crate) upload: Option<String>,
    /// Download bytes per `budget_window`.
    #[schemars(with = "Option<Size>")]
    pub(crate) download: Option<String>,
    /// The byte budgets' window.
    #[schemars(with = "Option<Duration>")]
    pub(crate) budget_window: Option<String>,
}

/// `limits.per_user:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
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
#[derive(Debug, Default, Deserialize, JsonSchema)]
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
    #[schemars(with = "Option<Duration>")]
    pub(crate) default_ttl: Option<String>,
    /// The longest lifetime a request may ask for.
    #[schemars(with = "Option<Duration>")]
    pub(crate) max_ttl: Option<String>,
    /// The proxy URL sandboxes are told to use.
    #[schemars(with = "Option<HttpUrl>")]
    pub(crate) proxy_url: Option<String>,
    /// `NO_PROXY` entries handed to sandboxes.
    pub(crate) no_proxy: Option<Vec<String>>,
    /// Where a sandbox finds its CA certificate (the path in its own file system).
    pub(crate) ca_file: Option<String>,
    /// Reload when the configuration file changes.
    pub(crate) watch: Option<Flag>,
}

/// `listen:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawListen {
    /// Explicit proxy listener, `host:port`.
    #[schemars(with = "Option<HostPort>")]
    pub(crate) proxy: Option<String>,
    /// Admin API listener, `host:port`.
    #[schemars(with = "Option<HostPort>")]
    pub(crate) admin: Option<String>,
    /// Transparent listener (REDIRECT / TPROXY), `host:port`.
    #[schemars(with = "Option<HostPort>")]
    pub(crate) transparent: Option<String>,
    /// Set `IP_TRANSPARENT` on the transparent listener, for TPROXY rules.
    pub(crate) transparent_tproxy: Option<Flag>,
    /// DNS responder (UDP and TCP), `host:port`.
    #[schemars(with = "Option<HostPort>")]
    pub(crate) dns: Option<String>,
    /// Preview listener (HTTPS, or HTTP on loopback), `host:port`.
    #[schemars(with = "Option<HostPort>")]
    pub(crate) preview: Option<String>,
    /// The console's own listener (HTTPS, or HTTP on loopback), `host:port`; else it is on the admin listener.
    #[schemars(with = "Option<HostPort>")]
    pub(crate) console: Option<String>,
}

/// `network:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawNetwork {
    /// CIDRs exempted from the special-range guard.
    #[serde(default)]
    #[schemars(with = "Vec<Cidr>")]
    pub(crate) allow_cidrs: Vec<String>,
    /// Metadata addresses an operator explicitly opts in to reaching.
    #[serde(default)]
    #[schemars(with = "Vec<IpAddress>")]
    pub(crate) dangerous_allow_metadata: Vec<String>,
    /// Static name -> address(es) overrides.
    #[serde(default)]
    pub(crate) hosts: BTreeMap<String, RawAddrs>,
    /// `dns` (default) or `system`.
    #[serde(default)]
    #[schemars(with = "Option<Resolver>")]
    pub(crate) resolver: Option<String>,
}

/// One address or a list of them.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged, expecting = "expected an IP address or a list of them")]
pub(super) enum RawAddrs {
    /// `name: 10.0.0.1`
    One(#[schemars(with = "IpAddress")] String),
    /// `name: [10.0.0.1, 10.0.0.2]`
    Many(#[schemars(with = "Vec<IpAddress>")] Vec<String>),
}

/// `timeouts:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawTimeouts {
    /// Dialling the upstream.
    #[schemars(with = "Option<Duration>")]
    pub(crate) connect: Option<String>,
    /// Receiving a complete request head from the client.
    #[schemars(with = "Option<Duration>")]
    pub(crate) request_headers: Option<String>,
    /// Receiving the first request head of a connection.
    #[schemars(with = "Option<Duration>")]
    pub(crate) first_request_headers: Option<String>,
    /// Waiting for the upstream's response head.
    #[schemars(with = "Option<Duration>")]
    pub(crate) upstream_headers: Option<String>,
    /// Draining in-flight work on shutdown.
    #[schemars(with = "Option<Duration>")]
    pub(crate) drain: Option<String>,
    /// A TLS handshake, with the client or with the upstream.
    #[schemars(with = "Option<Duration>")]
    pub(crate) tls_handshake: Option<String>,
    /// A tunnel with no bytes either way.
    #[schemars(with = "Option<Duration>")]
    pub(crate) idle: Option<String>,
    /// The longest a tunnel may stay open.
    #[schemars(with = "Option<Duration>")]
    pub(crate) tunnel_max: Option<String>,
}

/// `limits:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawLimits {
    /// Open client connections at once.
    pub(crate) max_connections: Option<Whole>,
    /// Request line plus headers.
    #[schemars(with = "Option<Size>")]
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
    #[schemars(with = "Option<Size>")]
    pub(crate) websocket_message: Option<String>,
    /// The largest WebSocket frame relayed, either way.
    #[schemars(with = "Option<Size>")]
    pub(crate) websocket_frame: Option<String>,
}

/// `limits.per_source:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawSourceLimits {
    /// Connections from one address that have not authenticated yet.
    pub(crate) unauthenticated: Option<Whole>,
    /// Failed proxy authentications from one address, whatever sandbox they name.
    pub(crate) auth_failures: Option<RawRate>,
}

/// `ca:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawCa {
    /// Folder holding one sub-folder per sandbox.
    pub(crate) dir: Option<String>,
    /// Lifetime of minted leaf certificates.
    #[schemars(with = "Option<Duration>")]
    pub(crate) leaf_validity: Option<String>,
    /// Leaf certificates kept ready.
    pub(crate) leaf_cache: Option<Whole>,
}

/// `upstream:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawUpstream {
    /// PEM files of CAs trusted besides the built-in roots.
    #[serde(default)]
    pub(crate) extra_roots: Vec<String>,
    /// How long an idle pooled upstream connection is kept.
    #[schemars(with = "Option<Duration>")]
    pub(crate) pool_idle: Option<String>,
}

/// One entry of `sandboxes:`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a sandbox: a mapping with id, user, policy (and token_sha256 or source_cidrs, unless only `cordon jail` serves it)"
)]
pub(super) struct RawSandbox {
    /// Sandbox id.
    #[schemars(with = "Option<Text>")]
    pub(crate) id: Option<String>,
    /// Owning user.
    #[schemars(with = "Option<Text>")]
    pub(crate) user: Option<String>,
    /// Hex SHA-256 of the sandbox's proxy token. Neither this nor `source_cidrs`: only `cordon jail` serves the
    /// sandbox (with a credential of its own).
    #[schemars(with = "Option<Sha256>")]
    pub(crate) token_sha256: Option<String>,
    /// Source ranges that identify this sandbox without a token.
    #[serde(default)]
    #[schemars(with = "Vec<Cidr>")]
    pub(crate) source_cidrs: Vec<String>,
    /// Name of the policy.
    pub(crate) policy: Option<String>,
}
