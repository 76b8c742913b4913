//! The validated configuration's types.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use ipnet::IpNet;

pub(crate) use super::listen::{Listen, Listener};
pub(crate) use crate::identity::SandboxSpec;
use crate::policy::Policy;

/// A validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where it came from, for messages.
    pub(crate) source: String,
    /// What its relative paths were read against (every path below is already resolved against it).
    pub(crate) base: super::paths::Base,
    /// Listener addresses.
    pub(crate) listen: Listen,
    /// Audit sink.
    pub(crate) audit: AuditConfig,
    /// The audit log's chain: checkpoint interval and signing key.
    pub(crate) audit_chain: AuditChain,
    /// Preview URLs into sandboxes, with `listen.preview`.
    pub(crate) previews: Option<super::previews::Previews>,
    /// The admin listener's TLS (`None`: plain HTTP, whose `/v1` is served only on loopback).
    pub(crate) admin_tls: Option<super::console::AdminTls>,
    /// The approval inbox in the browser, on `listen.console` or the admin listener.
    pub(crate) console: Option<super::console::Console>,
    /// What bounds a jail, and whether its activity is recorded.
    pub(crate) jail: super::jail::JailConfig,
    /// Each policy's `on_violation`, by policy name.
    pub(crate) on_violation: BTreeMap<String, super::violations::OnViolation>,
    /// Credential usage budgets.
    pub(crate) credential_budgets: super::violations::CredentialBudgets,
    /// Address guard and name overrides.
    pub(crate) network: Network,
    /// Timeouts.
    pub(crate) timeouts: Timeouts,
    /// Caps.
    pub(crate) limits: Limits,
    /// Per-sandbox certificate authorities.
    pub ca: CaConfig,
    /// cordon's connections to upstreams.
    pub(crate) upstream: UpstreamConfig,
    /// The file vault.
    pub(crate) vault: crate::config::credentials::FileVaultSpec,
    /// An OpenBao / HashiCorp Vault server, if configured.
    pub(crate) openbao: Option<crate::config::credentials::OpenBaoSpec>,
    /// How long a secret read from the file vault or OpenBao is kept (`vault.cache_ttl`; zero: read every time).
    pub(crate) secret_cache: std::time::Duration,
    /// Credentials by name.
    pub(crate) credentials: BTreeMap<crate::names::CredentialName, crate::config::credentials::CredentialSpec>,
    /// Sandboxes declared in the file.
    pub(crate) sandboxes: Vec<SandboxSpec>,
    /// Policies by name, each shared with the requests decided under it.
    pub policies: BTreeMap<String, std::sync::Arc<Policy>>,
    /// The control plane.
    pub(crate) control: ControlConfig,
    /// Human approval.
    pub(crate) approval: ApprovalConfig,
    /// Operational logs' format.
    pub(crate) log_format: LogFormat,
    /// What was accepted but is probably not meant (`FILE: PATH: message`): printed by `cordon check`, logged at
    /// start and reload.
    pub(crate) warnings: Vec<String>,
}

/// `control:` — the admin API, run-time sandboxes and reload.
#[derive(Debug, Clone)]
pub(crate) struct ControlConfig {
    /// The admin API's tokens: `admin_token` (as principal `admin`) and `admin_tokens`.
    pub(crate) admin_tokens: Vec<crate::config::principals::AdminToken>,
    /// The key that signs run-time sandboxes' proxy credentials; shared by replicas. `None`: a random key
    /// per process (credentials die with it).
    pub(crate) signing_key: Option<crate::config::credentials::SecretRef>,
    /// The SQLite sandbox store. `None` (and no `postgres`): in memory (run-time sandboxes die with the process).
    pub(crate) store: Option<PathBuf>,
    /// The PostgreSQL store shared by replicas on many hosts, instead of `store`.
    pub(crate) postgres: Option<PostgresConfig>,
    /// Lifetime of a run-time sandbox when the request names none.
    pub(crate) default_ttl: Duration,
    /// The longest lifetime a request may ask for.
    pub(crate) max_ttl: Duration,
    /// The proxy URL handed to sandboxes (`None`: `http://` + `listen.proxy`).
    pub(crate) proxy_url: Option<String>,
    /// `NO_PROXY` entries handed to sandboxes.
    pub(crate) no_proxy: Vec<String>,
    /// Where a sandbox finds its CA certificate, in its own file system.
    pub(crate) ca_file: String,
    /// Reload when the configuration file changes.
    pub(crate) watch: bool,
}

impl Default for ControlConfig {
    fn default() -> Self {
        ControlConfig {
            admin_tokens: Vec::new(),
            signing_key: None,
            store: None,
            postgres: None,
            default_ttl: Duration::from_secs(3600),
            max_ttl: Duration::from_secs(7 * 24 * 3600),
            proxy_url: None,
            no_proxy: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            ca_file: "/etc/cordon/ca.pem".into(),
            watch: true,
        }
    }
}

/// `control.store: postgres://…` and what goes with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PostgresConfig {
    /// The DSN as written (it carries no password).
    pub(crate) dsn: String,
    /// The password, from a secret source.
    pub(crate) password: Option<crate::config::credentials::SecretRef>,
    /// Extra roots for the server's certificate (besides the built-in web roots), from `store_ca_file`.
    pub(crate) roots: Vec<rustls_pki_types::CertificateDer<'static>>,
    /// Encrypts the sandboxes' CA keys at rest in the database.
    pub(crate) key: crate::config::credentials::SecretRef,
}

impl ControlConfig {
    /// The secrets it reads: the admin tokens, the signing key, and the PostgreSQL store's.
    pub(crate) fn refs(&self) -> impl Iterator<Item = &crate::config::credentials::SecretRef> {
        let tokens = self.admin_tokens.iter().map(|t| &t.token);
        tokens
            .chain(self.signing_key.iter())
            .chain(self.postgres.iter().flat_map(PostgresConfig::refs))
    }
}

impl PostgresConfig {
    /// The secrets it reads: the password, if any, and the store key.
    pub(crate) fn refs(&self) -> impl Iterator<Item = &crate::config::credentials::SecretRef> {
        self.password.iter().chain([&self.key])
    }
}

/// `log.format`: how operational logs (stderr) are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line (timestamp, level, message, fields), for a log pipeline.
    Json,
}

impl Config {
    /// The audit log's file, when audit records go to one.
    pub(crate) fn audit_file(&self) -> Option<&std::path::Path> {
        match &self.audit {
            AuditConfig::File(p) => Some(p),
            AuditConfig::Stdout => None,
        }
    }
}

/// `audit.signing_key` and `audit.checkpoint_interval`.
#[derive(Debug, Clone)]
pub(crate) struct AuditChain {
    /// Whether lines carry `seq`/`prev` and checkpoints are written (`audit.chain`, default true).
    pub(crate) enabled: bool,
    /// The secret the checkpoints' key is derived from; `None`: checkpoints are written unsigned.
    pub(crate) signing_key: Option<crate::config::credentials::SecretRef>,
    /// How often a checkpoint is written while records are (and always when cordon stops).
    pub(crate) checkpoint_interval: Duration,
    /// `audit.rotate`, `audit.retain`, `audit.compress` (a file only).
    pub(crate) rotation: AuditRotation,
    /// `audit.export.otlp`: records shipped as OpenTelemetry logs.
    pub(crate) otlp: Option<super::export::OtlpExport>,
}

/// When the audit file is rotated, and which rotated files are kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AuditRotation {
    /// Rotate once the file holds this many bytes.
    pub(crate) size: Option<u64>,
    /// Rotate once the file has been written to for this long.
    pub(crate) every: Option<Duration>,
    /// Keep at most this many rotated files.
    pub(crate) keep_files: Option<usize>,
    /// Delete rotated files older than this.
    pub(crate) keep_for: Option<Duration>,
    /// Compress rotated files (gzip).
    pub(crate) compress: bool,
}

/// Where audit records go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AuditConfig {
    /// Standard output.
    Stdout,
    /// Appended to this file.
    File(PathBuf),
}

/// `network:`
#[derive(Debug, Clone, Default)]
pub(crate) struct Network {
    /// Exceptions to the special-range guard.
    pub(crate) allow_cidrs: Vec<IpNet>,
    /// Metadata addresses explicitly opted in to. Dangerous: a sandbox that reaches them can steal the
    /// host's cloud credentials.
    pub(crate) dangerous_allow_metadata: Vec<IpAddr>,
    /// Static name overrides (still checked by the guard).
    pub(crate) hosts: HashMap<String, Vec<IpAddr>>,
    /// How other names are resolved.
    pub(crate) resolver: crate::net::ResolverKind,
}

/// `timeouts:`
#[derive(Debug, Clone)]
pub(crate) struct Timeouts {
    /// Dialling an upstream address.
    pub(crate) connect: Duration,
    /// Receiving a whole request head from a client (slow-header clients are cut off).
    pub(crate) request_headers: Duration,
    /// Receiving the first request head of a connection, counted from the accept (at most `request_headers`).
    pub(crate) first_request_headers: Duration,
    /// Waiting for an upstream's response head.
    pub(crate) upstream_headers: Duration,
    /// How long shutdown waits for in-flight requests and tunnels.
    pub(crate) drain: Duration,
    /// A TLS handshake, with the client (after CONNECT) or with the upstream.
    pub(crate) tls_handshake: Duration,
    /// A tunnel (intercepted or not) with no bytes either way is closed after this.
    pub(crate) idle: Duration,
    /// The longest a tunnel may stay open.
    pub(crate) tunnel_max: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            request_headers: Duration::from_secs(30),
            first_request_headers: Duration::from_secs(10),
            upstream_headers: Duration::from_secs(60),
            drain: Duration::from_secs(10),
            tls_handshake: Duration::from_secs(10),
            idle: Duration::from_secs(300),
            tunnel_max: Duration::from_secs(24 * 3600),
        }
    }
}

/// `limits:`
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    /// Client connections open at once; more are refused with 503.
    pub(crate) max_connections: usize,
    /// Request line plus headers; larger heads get 431.
    pub(crate) max_request_header_bytes: usize,
    /// Connections from one source address that have not authenticated yet; more are refused.
    pub(crate) unauthenticated_per_source: usize,
    /// Rates, caps and byte budgets per sandbox, per user and per source address.
    pub(crate) rates: crate::limits::LimitSpec,
    /// The largest WebSocket message relayed either way; a larger one closes the WebSocket with 1009.
    pub(crate) websocket_message: usize,
    /// The largest WebSocket frame relayed either way; a larger one closes the WebSocket with 1009.
    pub(crate) websocket_frame: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 4096,
            max_request_header_bytes: 64 * 1024,
            unauthenticated_per_source: 256,
            rates: default_rates(),
            websocket_message: 16 * 1024 * 1024,
            websocket_frame: 16 * 1024 * 1024,
        }
    }
}

/// The rates and caps in force when the file sets none: generous for one agent, a bound for a runaway one.
/// Byte budgets are off unless configured.
pub fn default_rates() -> crate::limits::LimitSpec {
    use crate::limits::Rate;
    use std::num::NonZeroU32;
    let rate = |per_second: u32, burst: u32| {
        NonZeroU32::new(per_second)
            .zip(NonZeroU32::new(burst))
            .map(|(per_second, burst)| Rate { per_second, burst })
    };
    crate::limits::LimitSpec {
        sandbox_requests: rate(100, 200),
        user_requests: rate(500, 1000),
        host_requests: None,
        sandbox_connections: rate(50, 100),
        sandbox_open: Some(512),
        user_open: Some(2048),
        budget_window: Duration::from_secs(3600),
        sandbox_upload: None,
        sandbox_download: None,
        auth_failures: rate(5, 20),
        source_auth_failures: rate(50, 200),
    }
}

/// `approval:` — requests of `action: ask` rules wait for a human.
#[derive(Debug, Clone)]
pub(crate) struct ApprovalConfig {
    /// How long a request waits for a decision before it is refused.
    pub(crate) timeout: Duration,
    /// Requests waiting at once; more are refused at once.
    pub(crate) max_pending: usize,
    /// Requests of one sandbox waiting at once.
    pub(crate) max_pending_per_sandbox: usize,
    /// Requests of one user's sandboxes waiting at once.
    pub(crate) max_pending_per_user: usize,
    /// Where pending approvals are announced.
    pub(crate) webhook: Option<WebhookSpec>,
}

impl Default for ApprovalConfig {
    fn default() -> Self {
        ApprovalConfig {
            timeout: Duration::from_secs(300),
            max_pending: 100,
            max_pending_per_sandbox: 10,
            max_pending_per_user: 50,
            webhook: None,
        }
    }
}

/// `approval.webhook:`
#[derive(Debug, Clone)]
pub(crate) struct WebhookSpec {
    /// POSTed to.
    pub(crate) url: http::Uri,
    /// Signs each POST (`X-Cordon-Signature`).
    pub(crate) secret: Option<crate::config::credentials::SecretRef>,
}

/// `ca:`
#[derive(Debug, Clone)]
pub struct CaConfig {
    /// Folder with one sub-folder per sandbox (`<dir>/<sandbox>/ca.pem`, `ca.key`).
    pub dir: PathBuf,
    /// Lifetime of minted leaves.
    pub(crate) leaf_validity: Duration,
    /// Leaves kept ready (entries of the (sandbox, host) cache).
    pub(crate) leaf_cache: u64,
}

impl Default for CaConfig {
    fn default() -> Self {
        CaConfig {
            dir: PathBuf::from("certs"),
            leaf_validity: Duration::from_secs(24 * 3600),
            leaf_cache: 10_000,
        }
    }
}

/// `upstream:`
#[derive(Debug, Clone)]
pub(crate) struct UpstreamConfig {
    /// The files named in `extra_roots`.
    pub(crate) extra_root_files: Vec<PathBuf>,
    /// The certificates they hold, trusted besides the built-in roots.
    pub(crate) extra_roots: Vec<rustls_pki_types::CertificateDer<'static>>,
    /// How long an idle pooled connection is kept.
    pub(crate) pool_idle: Duration,
}

impl Default for UpstreamConfig {
    fn default() -> Self {
        UpstreamConfig {
            extra_root_files: Vec::new(),
            extra_roots: Vec::new(),
            pool_idle: Duration::from_secs(90),
        }
    }
}

/// One problem found in a configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// File name.
    pub(crate) file: String,
    /// Line and column, where the parser knows them.
    pub(crate) location: Option<(usize, usize)>,
    /// Path of the offending value, e.g. `policies.web.allow[2].host`.
    pub(crate) path: String,
    /// What is wrong and what would be right.
    pub(crate) message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some((line, col)) = self.location {
            write!(f, ":{line}:{col}")?;
        }
        if self.path.is_empty() {
            write!(f, ": {}", self.message)
        } else {
            write!(f, ": {}: {}", self.path, self.message)
        }
    }
}

/// Every problem found; a configuration with any is never used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl std::fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}
