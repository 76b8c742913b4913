//! Where records go: the sink every record is written to, one that counts records in the metrics on the
//! way, and the production one that hands JSON lines to the audit thread.

use super::health::Health;
use super::kind::Verdict;
use super::record::Record;

/// Where records go.
pub trait Sink: Send + Sync + 'static {
    /// Write one record.
    fn write(&self, record: &Record);
    /// Whether records can be written now, if the sink knows (the pipeline serves nothing while they cannot).
    fn health(&self) -> Option<&Health> {
        None
    }
}

/// A sink that counts every record in the metrics before passing it on.
pub struct Metered {
    /// Where records go.
    pub(crate) inner: std::sync::Arc<dyn Sink>,
    /// What counts them.
    pub(crate) metrics: std::sync::Arc<crate::metrics::Metrics>,
}

impl Sink for Metered {
    fn write(&self, r: &Record) {
        // The record's own decision: a request allowed and then failed upstream is an `allow` in both, with
        // `outcome="error"` in the metric and its `error` in the record.
        let decision = match r.decision() {
            Verdict::Allow => "allow",
            Verdict::Deny => "deny",
            Verdict::WouldDeny => "would_deny",
        };
        let outcome = if r.decision() != Verdict::Deny && r.has_error() {
            "error"
        } else {
            "ok"
        };
        let latency = std::time::Duration::from_secs_f64((r.duration_ms() / 1e3).max(0.0));
        self.metrics
            .request(r.kind().as_str(), decision, outcome, r.reason().unwrap_or(""), latency);
        self.inner.write(r);
    }
    fn health(&self) -> Option<&Health> {
        self.inner.health()
    }
}

/// The production sink: one JSON line per record, handed to `out` (in `cordon run`, the queue of the audit
/// thread that `logging::init` starts). Writing never blocks on the disk unless that queue is full.
pub struct LineSink<L> {
    out: L,
}

impl<L> LineSink<L> {
    /// A sink handing each record's line to `out`.
    pub(crate) fn new(out: L) -> LineSink<L> {
        LineSink { out }
    }
}

impl<L: super::writer::Lines + 'static> Sink for LineSink<L> {
    fn write(&self, record: &Record) {
        let mut line = Vec::with_capacity(LINE_CAPACITY);
        if let Err(e) = serde_json::to_writer(&mut line, record) {
            tracing::error!("audit record could not be serialised: {e}");
            return;
        }
        line.push(b'\n');
        self.out.line(line);
    }
    fn health(&self) -> Option<&Health> {
        self.out.health()
    }
}

/// Room for a typical record, so serialising it does not grow the buffer.
const LINE_CAPACITY: usize = 640;

#[cfg(test)]
#[path = "sink_tests.rs"]
mod tests;
