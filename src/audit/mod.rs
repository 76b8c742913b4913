//! The audit record: exactly one per request and per tunnel, also when it was refused or failed.
//!
//! Field names live here and nowhere else. A record never holds a credential, a token or a query string:
//! paths are recorded without their query, and nothing from request headers is copied in.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime};

use serde::Serialize;

pub mod writer;

/// What kind of traffic a record describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A plain HTTP request forwarded in absolute form.
    Http,
    /// A CONNECT tunnel (intercepted or not).
    Connect,
    /// A request inside an intercepted CONNECT.
    Https,
    /// Bytes that never became a request (refused framing, oversized head).
    Malformed,
    /// Failed proxy authentications from one address that were throttled, counted in one record.
    AuthFailures,
    /// A connection that reached the transparent listener (TLS, or refused before it was HTTP).
    Transparent,
    /// A DNS query to the responder.
    Dns,
}

/// The outcome of the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Allowed by a rule.
    Allow,
    /// Refused.
    Deny,
    /// Allowed only because the policy is in report mode.
    WouldDeny,
}

/// One audit record.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Record {
    /// RFC 3339 time the request arrived.
    pub time: String,
    /// Sandbox id, once known.
    pub sandbox: Option<String>,
    /// The sandbox's user.
    pub user: Option<String>,
    /// Client address.
    pub client: String,
    /// Kind of traffic.
    pub kind: Kind,
    /// Request method.
    pub method: Option<String>,
    /// Normalised destination host.
    pub host: Option<String>,
    /// Destination port.
    pub port: Option<u16>,
    /// Request path without the query string.
    pub path: Option<String>,
    /// What was decided.
    pub decision: Verdict,
    /// Machine-readable reason for a refusal, a would-deny or a failure.
    pub reason: Option<String>,
    /// The policy consulted.
    pub policy: Option<String>,
    /// Index of the allowing rule in that policy.
    pub rule: Option<usize>,
    /// The address actually dialled.
    pub dialled: Option<String>,
    /// Names of the credentials applied (never their values).
    pub credentials: Option<Vec<String>>,
    /// Status returned to the client.
    pub status: Option<u16>,
    /// Bytes from the client (request body or tunnel upload).
    pub bytes_up: u64,
    /// Bytes to the client (response body or tunnel download).
    pub bytes_down: u64,
    /// Milliseconds from arrival to the end of the exchange.
    pub duration_ms: f64,
    /// Detail of a failure, for operators.
    pub error: Option<String>,
    /// The human approval the request waited for (`action: ask`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalRecord>,
    /// How many attempts one `auth_failures` record stands for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// Transparent mode: the address the sandbox connected to (cordon dials its own resolution instead).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_dst: Option<String>,
    /// Transparent mode: whether that address is not one cordon resolved (or dialled) for the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_dst_differs: Option<bool>,
    /// DNS: the record type asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qtype: Option<String>,
}

/// Who asked, who decided, when: the approval part of a record.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ApprovalRecord {
    /// The approval's id (or the grant's, for a request a standing grant let through).
    pub id: String,
    /// `allow`, `deny`, `timeout`, `granted` or `queue_full`.
    pub outcome: String,
    /// Who decided.
    pub by: Option<String>,
    /// `once` or `always`.
    pub scope: Option<String>,
    /// Milliseconds the request waited.
    pub waited_ms: u64,
}

/// Where records go.
pub trait Sink: Send + Sync + 'static {
    /// Write one record.
    fn write(&self, record: &Record);
}

/// A sink that counts every record in the metrics before passing it on.
pub struct Metered {
    /// Where records go.
    pub inner: std::sync::Arc<dyn Sink>,
    /// What counts them.
    pub metrics: std::sync::Arc<crate::metrics::Metrics>,
}

impl Sink for Metered {
    fn write(&self, r: &Record) {
        let kind = match r.kind {
            Kind::Http => "http",
            Kind::Connect => "connect",
            Kind::Https => "https",
            Kind::Malformed => "malformed",
            Kind::AuthFailures => "auth_failures",
            Kind::Transparent => "transparent",
            Kind::Dns => "dns",
        };
        let decision = match r.decision {
            Verdict::Deny => "deny",
            _ if r.error.is_some() => "error",
            Verdict::Allow => "allow",
            Verdict::WouldDeny => "would_deny",
        };
        let latency = std::time::Duration::from_secs_f64((r.duration_ms / 1e3).max(0.0));
        self.metrics
            .request(kind, decision, r.reason.as_deref().unwrap_or(""), latency);
        self.inner.write(r);
    }
}

/// The production sink: one JSON line per record, handed to `out` (in `cordon run`, the queue of the audit
/// thread that `logging::init` starts). Writing never blocks on the disk unless that queue is full.
pub struct LineSink<L> {
    out: L,
}

impl<L> LineSink<L> {
    /// A sink handing each record's line to `out`.
    pub fn new(out: L) -> LineSink<L> {
        LineSink { out }
    }
}

impl<L: crate::audit::writer::Lines + 'static> Sink for LineSink<L> {
    fn write(&self, record: &Record) {
        let mut line = Vec::with_capacity(LINE_CAPACITY);
        if let Err(e) = serde_json::to_writer(&mut line, record) {
            tracing::error!("audit record could not be serialised: {e}");
            return;
        }
        line.push(b'\n');
        self.out.line(line);
    }
}

/// Room for a typical record, so serialising it does not grow the buffer.
const LINE_CAPACITY: usize = 640;

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
    pub fn start(sink: Arc<dyn Sink>, client: SocketAddr, kind: Kind) -> Pending {
        Pending {
            record: Record {
                time: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
                sandbox: None,
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
                approval: None,
                count: None,
                original_dst: None,
                original_dst_differs: None,
                qtype: None,
            },
            started: Instant::now(),
            sink,
            up: Arc::new(AtomicU64::new(0)),
            down: Arc::new(AtomicU64::new(0)),
            done: false,
        }
    }

    /// The record so far, to fill in.
    pub fn record(&mut self) -> &mut Record {
        &mut self.record
    }

    /// Counter of bytes from the client.
    pub fn up_counter(&self) -> Arc<AtomicU64> {
        self.up.clone()
    }

    /// Counter of bytes to the client.
    pub fn down_counter(&self) -> Arc<AtomicU64> {
        self.down.clone()
    }

    /// Drop without a record (for attempts counted in an aggregate record instead).
    pub fn discard(mut self) {
        self.done = true;
    }

    /// Emit now.
    pub fn finish(mut self) {
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

impl Drop for Pending {
    fn drop(&mut self) {
        self.emit();
    }
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, reason = "tests")]
    use std::sync::Mutex;

    use super::*;

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl crate::audit::writer::Lines for Shared {
        fn line(&self, line: Vec<u8>) {
            self.0.lock().unwrap().extend_from_slice(&line);
        }
    }

    #[test]
    fn line_sink_writes_one_json_line_per_record() {
        let out = Shared::default();
        let sink: Arc<dyn Sink> = Arc::new(LineSink::new(out.clone()));
        let mut first = Pending::start(sink.clone(), "127.0.0.1:4000".parse().unwrap(), Kind::Https);
        first.record().host = Some("api.test".into());
        first.record().path = Some("/a \"quoted\"\nline".into());
        first.finish();
        // Dropped without finish: still exactly one record.
        drop(Pending::start(sink, "[::1]:5000".parse().unwrap(), Kind::Connect));
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(text.ends_with('\n'));
        let a: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        let b: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(a["host"], "api.test");
        assert_eq!(a["path"], "/a \"quoted\"\nline", "escaped inside its one line");
        assert_eq!(a["kind"], "https");
        assert_eq!(b["client"], "[::1]:5000");
        assert_eq!(b["decision"], "deny");
    }
}
