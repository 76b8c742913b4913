//! The builder that fills a record during a request's life and emits it exactly once, and the records the
//! audit writes itself (throttled authentication failures, `on_violation` actions).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::kind::{ApprovalRecord, Hashes, Kind, Verdict};
use super::record::Record;
use super::sink::Sink;
use crate::error::{Side, TunnelEnd};
use crate::identity::Sandbox;
use crate::reason::Reason;
use crate::target::Target;

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
                access: None,
                count: None,
                original_dst: None,
                original_dst_differs: None,
                qtype: None,
                set_cookie_stripped: None,
                sha256: None,
                admin: None,
                jail: None,
                exec: None,
                file: None,
                protocol: None,
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

    /// What the record says was asked for, as the sandbox sent it (method, host, port, path without its
    /// query: filled when the exchange started, before any phase changed the request), for the refusal the
    /// sandbox reads.
    pub(crate) fn subject(&self) -> crate::error::Subject {
        crate::error::Subject {
            method: self.record.method.clone(),
            host: self.record.host.clone(),
            port: self.record.port,
            path: self.record.path.clone(),
            may_ask: false,
        }
    }

    /// The destination port, where no [`Target`] was parsed (a held request an admin decision covered).
    pub(crate) fn port(&mut self, port: u16) {
        self.record.port = Some(port);
    }

    /// The policy consulted, where no sandbox identity is at hand.
    pub(crate) fn policy(&mut self, policy: &str) {
        self.record.policy = Some(policy.to_string());
    }

    /// The `exec` part of an `exec` record.
    pub(crate) fn exec(&mut self, exec: super::kind::ExecRecord) {
        self.record.exec = Some(exec);
    }

    /// The `file` part of a `file` record.
    pub(crate) fn file(&mut self, file: super::kind::FileRecord) {
        self.record.file = Some(file);
    }

    /// The `jail` part of a `jail` record.
    pub(crate) fn jail(&mut self, jail: super::kind::JailRecord) {
        self.record.jail = Some(jail);
    }

    /// The admin part of an `admin` record.
    pub(crate) fn admin(&mut self, admin: super::kind::AdminRecord) {
        self.record.admin = Some(admin);
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
    pub(crate) fn credentials(&mut self, names: Vec<crate::names::CredentialName>) {
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

    /// What a request to an MCP, GraphQL ... endpoint said, as its protocol's section (the message or operation
    /// that decided).
    pub(crate) fn protocol(&mut self, section: crate::policy::protocol::ProtocolRecord) {
        self.record.protocol = Some(section);
    }

    /// The access request the sandbox filed or read.
    pub(crate) fn access(&mut self, access: super::kind::AccessRecord) {
        self.record.access = Some(access);
    }

    /// The human approval the request waited for.
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
    pub(crate) fn sha256(&mut self, hashes: Hashes) {
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
        if let Some(section) = &mut self.record.protocol {
            section.complete();
        }
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
    pub sandbox: &'a crate::names::SandboxId,
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
    pending.record.sandbox = Some(v.sandbox.to_string());
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
