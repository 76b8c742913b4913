//! The audit record and the builder that fills it during a request's life and emits it exactly once.
//!
//! Field names live here and nowhere else. The fields are private: a record is filled through the typed
//! setters of [`Pending`], which only the request pipeline calls (`tests/layers.rs` holds it to that), and
//! read through the getters. A record never holds a credential, a token or a query string: paths are
//! recorded without their query, and nothing from request headers is copied in.

use crate::reason::Reason;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde::Serialize;

use super::Sink;
pub use super::kind::{ApprovalRecord, Kind, Verdict};
use crate::error::{Side, TunnelEnd};
use crate::identity::Sandbox;
use crate::target::Target;

/// One audit record.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Record {
    /// RFC 3339 time the request arrived.
    time: String,
    /// Sandbox id, once known.
    sandbox: Option<String>,
    /// The sandbox's incarnation (`Sandbox::incarnation`), for what is kept per incarnation (credential
    /// budgets); not written out.
    #[serde(skip)]
    incarnation: Option<String>,
    /// The sandbox's user.
    user: Option<String>,
    /// Client address.
    client: String,
    /// Kind of traffic.
    kind: Kind,
    /// Request method.
    method: Option<String>,
    /// Normalised destination host.
    host: Option<String>,
    /// Destination port.
    port: Option<u16>,
    /// Request path without the query string.
    path: Option<String>,
    /// What was decided.
    decision: Verdict,
    /// Machine-readable reason for a refusal, a would-deny or a failure.
    reason: Option<String>,
    /// The policy consulted.
    policy: Option<String>,
    /// Index of the allowing rule in that policy.
    rule: Option<usize>,
    /// The address actually dialled (for DNS: the addresses answered).
    dialled: Option<String>,
    /// Names of the credentials applied (never their values).
    credentials: Option<Vec<String>>,
    /// Status returned to the client.
    status: Option<u16>,
    /// Bytes from the client (request body or tunnel upload).
    bytes_up: u64,
    /// Bytes to the client (response body or tunnel download).
    bytes_down: u64,
    /// Milliseconds from arrival to the end of the exchange.
    duration_ms: f64,
    /// Detail of a failure, for operators.
    error: Option<String>,
    /// Whose the refusal or failure was: `downstream` (the sandbox's request), `upstream` or `internal`.
    #[serde(skip_serializing_if = "Option::is_none")]
    side: Option<&'static str>,
    /// The human approval the request waited for (`action: ask`).
    #[serde(skip_serializing_if = "Option::is_none")]
    approval: Option<ApprovalRecord>,
    /// How many attempts one `auth_failures` record stands for.
    #[serde(skip_serializing_if = "Option::is_none")]
    count: Option<u64>,
    /// Transparent mode: the address the sandbox connected to (cordon dials its own resolution instead).
    #[serde(skip_serializing_if = "Option::is_none")]
    original_dst: Option<String>,
    /// Transparent mode: whether that address is not one cordon resolved (or dialled) for the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    original_dst_differs: Option<bool>,
    /// DNS: the record type asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    qtype: Option<String>,
    /// Preview: the names of the cookies a dev server tried to set that cordon removed (cordon's own cookie,
    /// or another domain's).
    #[serde(skip_serializing_if = "Option::is_none")]
    set_cookie_stripped: Option<Vec<String>>,
    /// `jail_file`: the file's SHA-256 before and after the jailed command (`null`: it did not exist).
    #[serde(skip_serializing_if = "Option::is_none")]
    sha256: Option<super::jail_file::Hashes>,
}

impl Record {
    /// Kind of traffic.
    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    /// What was decided.
    pub(crate) fn decision(&self) -> Verdict {
        self.decision
    }

    /// Machine-readable reason, if any.
    pub(crate) fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// Whether the exchange failed (after being allowed) or was refused with a detail.
    pub(crate) fn sandbox(&self) -> Option<&str> {
        self.sandbox.as_deref()
    }

    pub(crate) fn incarnation(&self) -> Option<&str> {
        self.incarnation.as_deref()
    }

    pub(crate) fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    pub(crate) fn policy(&self) -> Option<&str> {
        self.policy.as_deref()
    }

    pub(crate) fn host(&self) -> Option<&str> {
        self.host.as_deref()
    }

    pub(crate) fn port(&self) -> Option<u16> {
        self.port
    }

    pub(crate) fn credentials(&self) -> Option<&[String]> {
        self.credentials.as_deref().filter(|c| !c.is_empty())
    }

    pub(crate) fn bytes_up(&self) -> u64 {
        self.bytes_up
    }

    pub(crate) fn bytes_down(&self) -> u64 {
        self.bytes_down
    }

    pub(crate) fn has_error(&self) -> bool {
        self.error.is_some()
    }

    /// Milliseconds from arrival to the end.
    pub(crate) fn duration_ms(&self) -> f64 {
        self.duration_ms
    }
}

/// Builds a record through a request's life and emits it exactly once: on `finish`, or when dropped
/// (a client that disconnects mid-stream still leaves a record).
pub struct Pending {
    record: Record,
    started: Instant,
    sink: Arc<dyn Sink>,
    up: Arc<AtomicU64>,
    down: Arc<AtomicU64>,
    done: bool,
}

impl Pending {
    /// Start a record for traffic from `client`.
    pub(crate) fn start(sink: Arc<dyn Sink>, client: SocketAddr, kind: Kind) -> Pending {
        Pending {
            record: Record {
                time: crate::rfc3339::now_millis(),
                sandbox: None,
                incarnation: None,
                user: None,
                client: client.to_string(),
                kind,
                method: None,
                host: None,
                port: None,
                path: None,
                decision: Verdict::Deny,
                reason: None,
                policy: None,
                rule: None,
                dialled: None,
                credentials: None,
                status: None,
                bytes_up: 0,
                bytes_down: 0,
                duration_ms: 0.0,
                error: None,
                side: None,
                approval: None,
                count: None,
                original_dst: None,
                original_dst_differs: None,
                qtype: None,
                set_cookie_stripped: None,
                sha256: None,
            },
            started: Instant::now(),
            sink,
            up: Arc::new(AtomicU64::new(0)),
            down: Arc::new(AtomicU64::new(0)),
            done: false,
        }
    }

    /// The request method (`None` for traffic that has none, e.g. a transparent TLS connection).
    pub(crate) fn method(&mut self, method: Option<&str>) {
        self.record.method = method.map(str::to_string);
    }

    /// Who is talking.
    pub(crate) fn identity(&mut self, sandbox: &Sandbox) {
        let r = &mut self.record;
        r.sandbox = Some(sandbox.id.to_string());
        r.incarnation = Some(sandbox.incarnation().to_string());
        r.user = Some(sandbox.user.clone());
        r.policy = Some(sandbox.policy.clone());
    }

    /// The person a preview request comes from (the user its link was made for), in place of the sandbox's
    /// owner.
    pub(crate) fn visitor(&mut self, user: &str) {
        self.record.user = Some(user.to_string());
    }

    /// Where to.
    pub(crate) fn target(&mut self, target: &Target) {
        self.record.host = Some(target.host.to_string());
        self.record.port = Some(target.port);
    }

    /// A destination name that is not (yet) a target, e.g. a DNS query's.
    pub(crate) fn host(&mut self, host: &str) {
        self.record.host = Some(host.to_string());
    }

    /// The request path (without its query).
    pub(crate) fn path(&mut self, path: &str) {
        self.record.path = Some(path.to_string());
    }

    /// What the policy decided for a request that goes on: the allowing rule, or none with the reason it
    /// would have been denied (report mode).
    pub(crate) fn allowed(&mut self, rule: Option<usize>, would_deny: Option<Reason>) {
        let r = &mut self.record;
        r.rule = rule;
        r.decision = if would_deny.is_some() {
            Verdict::WouldDeny
        } else {
            Verdict::Allow
        };
        r.reason = would_deny.map(|reason| reason.code().to_string());
    }

    /// A refusal (`deny`: refused, as opposed to failing after being allowed) with its status, if an HTTP
    /// answer was given, its reason code and the operator-facing detail.
    pub(crate) fn refused(
        &mut self,
        deny: bool,
        status: Option<u16>,
        reason: Reason,
        side: Side,
        detail: Option<String>,
    ) {
        let r = &mut self.record;
        r.side = Some(side.as_str());
        if deny {
            r.decision = Verdict::Deny;
        }
        r.status = status.or(r.status);
        r.reason = Some(reason.code().to_string());
        r.error = detail;
    }

    /// How a tunnel (or a connection that never became one) ended.
    pub(crate) fn ended(&mut self, end: &TunnelEnd) {
        if let Some(reason) = end.reason() {
            self.record.reason = Some(reason.code().to_string());
        }
        // SECURITY: a refusal at any stage (after a 200 to CONNECT too) is a `deny`, so a search for denials
        // finds it.
        if end.is_refusal() {
            self.record.decision = Verdict::Deny;
        }
        self.record.error = Some(end.detail());
        self.record.side = end.side().map(Side::as_str);
    }

    /// The address dialled (for DNS, the addresses answered).
    pub(crate) fn dialled(&mut self, dialled: String) {
        self.record.dialled = Some(dialled);
    }

    /// The names of the credentials applied.
    pub(crate) fn credentials(&mut self, names: Vec<String>) {
        if !names.is_empty() {
            self.record.credentials = Some(names);
        }
    }

    /// The cookies a dev server tried to set that were removed from its answer (by name).
    pub(crate) fn set_cookie_stripped(&mut self, names: Vec<String>) {
        self.record.set_cookie_stripped = Some(names);
    }

    /// The status the client got.
    pub(crate) fn status(&mut self, status: u16) {
        self.record.status = Some(status);
    }

    /// The approval the request waited for.
    pub(crate) fn approval(&mut self, approval: ApprovalRecord) {
        self.record.approval = Some(approval);
    }

    /// Transparent mode: where the sandbox was connecting to.
    pub(crate) fn original_dst(&mut self, original: SocketAddr) {
        self.record.original_dst = Some(original.to_string());
    }

    /// Transparent mode: whether the sandbox aimed elsewhere than cordon's own resolution of the host.
    pub(crate) fn original_dst_differs(&mut self, differs: bool) {
        self.record.original_dst_differs = Some(differs);
    }

    /// DNS: the record type asked for.
    pub(crate) fn qtype(&mut self, qtype: &str) {
        self.record.qtype = Some(qtype.to_string());
    }

    /// The sandbox alone, for a record that is not a request's (its user and policy unknown).
    pub(crate) fn sandbox_id(&mut self, id: &str) {
        self.record.sandbox = Some(id.to_owned());
    }

    /// The reason, for a record that is not a refusal.
    pub(crate) fn reason(&mut self, reason: Reason) {
        self.record.reason = Some(reason.code().to_owned());
    }

    /// A changed file's hashes before and after.
    pub(crate) fn sha256(&mut self, hashes: super::jail_file::Hashes) {
        self.record.sha256 = Some(hashes);
    }

    /// How many attempts the record stands for.
    pub(crate) fn count(&mut self, n: u64) {
        self.record.count = Some(n);
    }

    /// Counter of bytes from the client.
    pub(crate) fn up_counter(&self) -> Arc<AtomicU64> {
        self.up.clone()
    }

    /// Counter of bytes to the client.
    pub(crate) fn down_counter(&self) -> Arc<AtomicU64> {
        self.down.clone()
    }

    /// This exchange is counted in an aggregate record (an address throttled for failed logins), not one of
    /// its own: nothing is emitted for it.
    pub(crate) fn counted_elsewhere(&mut self) {
        self.done = true;
    }

    /// Emit now.
    pub(crate) fn finish(mut self) {
        self.emit();
    }

    fn emit(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        self.record.bytes_up += self.up.load(Ordering::Relaxed);
        self.record.bytes_down += self.down.load(Ordering::Relaxed);
        self.record.duration_ms = (self.started.elapsed().as_secs_f64() * 1e6).round() / 1e3;
        if self.record.original_dst_differs.is_none()
            && let (Some(original), Some(dialled)) = (&self.record.original_dst, &self.record.dialled)
        {
            self.record.original_dst_differs = Some(original != dialled);
        }
        self.sink.write(&self.record);
    }
}

/// The one record for `n` proxy authentication attempts from `ip` refused while it was throttled: an
/// aggregate, not a request's record, written by the audit itself.
pub(crate) fn auth_failures(sink: &Arc<dyn Sink>, ip: std::net::IpAddr, n: u64, reason: Reason) {
    let mut pending = Pending::start(sink.clone(), SocketAddr::new(ip, 0), Kind::AuthFailures);
    pending.refused(
        true,
        Some(429),
        reason,
        Side::Downstream,
        Some(format!(
            "{n} proxy authentication attempts from {ip} refused while it was throttled (limits.auth_failures)"
        )),
    );
    pending.count(n);
    pending.finish();
}

/// An `on_violation` action, as its record says it.
pub struct Violation<'a> {
    /// The sandbox acted on.
    pub sandbox: &'a str,
    /// Its user.
    pub user: Option<&'a str>,
    /// Its policy.
    pub policy: &'a str,
    /// The action's reason (`on_violation_revoke`, `on_violation_hold`).
    pub reason: Reason,
    /// Refusals counted.
    pub count: u64,
    /// What happened, in a sentence.
    pub detail: String,
}

/// The one record of an `on_violation` action (kind `violation`): a `deny` with reason `on_violation_revoke` or
/// `on_violation_hold`, the refusals counted in `count`, and the kind and window in `error`.
pub fn violation(sink: &Arc<dyn Sink>, v: Violation<'_>) {
    let mut pending = Pending::start(sink.clone(), SocketAddr::from(([0, 0, 0, 0], 0)), Kind::Violation);
    pending.record.sandbox = Some(v.sandbox.to_owned());
    pending.record.user = v.user.map(str::to_owned);
    pending.record.policy = Some(v.policy.to_owned());
    pending.refused(true, None, v.reason, Side::Downstream, Some(v.detail));
    pending.count(v.count);
    pending.finish();
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.emit();
    }
}
