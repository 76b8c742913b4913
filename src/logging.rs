//! Two streams: audit records (one JSON line each, to stdout or a file) and operational logs (stderr).
//!
//! Audit lines are written by a thread of their own ([`crate::audit::writer`], never lossy) through a
//! buffer, in batches: a request never waits for the disk, a burst of records costs one `write` rather
//! than one each, and a quiet proxy has every record on disk within moments of the request ending. When the
//! queue is full (the disk cannot keep up), requests wait rather than lose records. [`Audit`] flushes what
//! is queued when cordon stops.

use std::fs::OpenOptions;
use std::io::{BufWriter, IsTerminal};
use std::sync::Arc;

use tracing_subscriber::filter::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, fmt};

use crate::audit::writer as audit_writer;
use crate::audit::{self, LineSink};
use crate::config::{AuditConfig, LogFormat};

/// Where audit records go. Records still queued are written out when this is dropped: keep it until the
/// end.
#[must_use = "dropping it at once stops the audit writer"]
pub(crate) struct Audit {
    /// The sink to hand to the proxy state.
    pub(crate) sink: Arc<dyn audit::Sink>,
    _flush: audit_writer::Flusher,
}

/// Lines the audit writer holds before requests wait for it.
const AUDIT_QUEUE: usize = 65_536;
/// The audit writer's buffer: one `write` per this much, or per burst, whichever is smaller.
const AUDIT_BUFFER: usize = 64 * 1024;
/// How long the audit thread rests after each batch: under load, records handed over meanwhile wake
/// nobody and go out together in the next batch.
const AUDIT_PAUSE: std::time::Duration = std::time::Duration::from_millis(2);

/// Install the global subscriber for operational logs (verbosity from `CORDON_LOG`, default `info`) and
/// start the audit writer.
/// `format` (`log.format`) chooses human-readable lines or one JSON object per line.
pub(crate) fn init(audit_to: &AuditConfig, format: LogFormat) -> Result<Audit, String> {
    let ops_filter = EnvFilter::try_from_env("CORDON_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,hickory_server=warn,hickory_proto=warn"));
    let ops = match format {
        LogFormat::Text => fmt::layer()
            .with_writer(std::io::stderr)
            .with_target(false)
            .with_ansi(std::io::stderr().is_terminal())
            .with_filter(ops_filter)
            .boxed(),
        LogFormat::Json => fmt::layer()
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .with_writer(std::io::stderr)
            .with_target(false)
            .with_filter(ops_filter)
            .boxed(),
    };
    let out: Box<dyn std::io::Write + Send> = match audit_to {
        AuditConfig::Stdout => Box::new(BufWriter::with_capacity(AUDIT_BUFFER, std::io::stdout())),
        AuditConfig::File(path) => {
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| format!("cannot open the audit file {}: {e}", path.display()))?;
            Box::new(BufWriter::with_capacity(AUDIT_BUFFER, file))
        }
    };
    let (queue, flusher) = audit_writer::start("cordon-audit", out, AUDIT_QUEUE, AUDIT_PAUSE)
        .map_err(|e| format!("cannot start the audit thread: {e}"))?;
    tracing_subscriber::registry()
        .with(ops)
        .try_init()
        .map_err(|e| format!("logging was already set up: {e}"))?;
    Ok(Audit {
        sink: Arc::new(LineSink::new(queue)),
        _flush: flusher,
    })
}
