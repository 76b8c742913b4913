//! The audit output's metrics: whether records are written, and how their export to a collector goes.

use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// The `outcome` label.
type OutcomeLabel = [(&'static str, &'static str); 1];

/// Registered with the rest; set by the admin API when scraped (the output's state) and by the exporter.
#[derive(Debug)]
pub(crate) struct AuditMetrics {
    up: Gauge<u64, AtomicU64>,
    dropped: Counter,
    export_records: Family<OutcomeLabel, Counter>,
    export_failures: Counter,
    export_backlog: Gauge<u64, AtomicU64>,
    export_dropped: Counter,
}

impl AuditMetrics {
    pub(super) fn register(registry: &mut Registry) -> AuditMetrics {
        let m = AuditMetrics {
            up: Gauge::default(),
            dropped: Counter::default(),
            export_records: Family::default(),
            export_failures: Counter::default(),
            export_backlog: Gauge::default(),
            export_dropped: Counter::default(),
        };
        m.up.set(1);
        registry.register(
            "cordon_audit_up",
            "1 while audit records are written, 0 while the audit output fails (requests are refused meanwhile)",
            m.up.clone(),
        );
        registry.register(
            "cordon_audit_records_dropped",
            "Records of refused requests not kept while the audit output failed, past what cordon holds in memory",
            m.dropped.clone(),
        );
        registry.register(
            "cordon_audit_export_records",
            "Audit lines the OTLP collector took (outcome sent) or refused (outcome rejected)",
            m.export_records.clone(),
        );
        registry.register(
            "cordon_audit_export_failures",
            "OTLP export requests that failed and will be tried again",
            m.export_failures.clone(),
        );
        registry.register(
            "cordon_audit_export_backlog_bytes",
            "Bytes of audit lines waiting in the export spool",
            m.export_backlog.clone(),
        );
        registry.register(
            "cordon_audit_export_dropped_bytes",
            "Bytes of audit lines deleted from the export spool unsent (over its bound)",
            m.export_dropped.clone(),
        );
        m
    }

    /// The audit output's state, read when the metrics are scraped: up or not, and records dropped in total.
    pub(crate) fn set_output(&self, up: bool, dropped: u64) {
        self.up.set(u64::from(up));
        raise_to(&self.dropped, dropped);
    }

    /// The export spool's backlog and what it dropped in total.
    pub(crate) fn set_export(&self, backlog: u64, dropped: u64) {
        self.export_backlog.set(backlog);
        raise_to(&self.export_dropped, dropped);
    }

    /// Lines the collector took and refused in one export.
    pub(crate) fn exported(&self, sent: u64, rejected: u64) {
        self.export_records.get_or_create(&[("outcome", "sent")]).inc_by(sent);
        if rejected > 0 {
            self.export_records
                .get_or_create(&[("outcome", "rejected")])
                .inc_by(rejected);
        }
    }

    /// An export that will be tried again.
    pub(crate) fn export_failed(&self) {
        self.export_failures.inc();
    }
}

/// Bring a counter kept elsewhere as a total up to `total`.
fn raise_to(counter: &Counter, total: u64) {
    let counted = counter.get();
    if total > counted {
        counter.inc_by(total - counted);
    }
}
