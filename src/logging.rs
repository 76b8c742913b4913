//! Two streams: audit records (one JSON line each, to stdout or a file) and operational logs (stderr).
//!
//! Audit lines are written by a thread of their own ([`crate::audit::writer`], never lossy) through a
//! buffer, in batches: a request never waits for the disk, a burst of records costs one `write` rather
//! than one each, and a quiet proxy has every record on disk within moments of the request ending. When the
//! queue is full (the disk cannot keep up), requests wait rather than lose records. [`Audit`] flushes what
//! is queued when cordon stops.

use std::fs::OpenOptions;
use std::sync::Arc;

use tracing_subscriber::filter::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, fmt};

use crate::audit::writer as audit_writer;
use crate::audit::{self, LineSink};
use crate::config::{AuditChain, AuditConfig, LogFormat};

mod lines;
pub(crate) use lines::Stderr;

/// Where audit records go. Records still queued are written out when this is dropped: keep it until the
/// end.
#[must_use = "dropping it at once stops the audit writer"]
pub(crate) struct Audit {
    /// The sink to hand to the proxy state.
    pub(crate) sink: Arc<dyn audit::Sink>,
    /// The writer's queue, to hand it the checkpoints' key once secrets can be read.
    queue: audit_writer::LineQueue,
    /// The export spool every line is copied to (`audit.export.otlp`), for the exporter to read.
    pub(crate) spool: Option<Arc<audit::spool::Spool>>,
    _flush: audit_writer::Flusher,
}

impl Audit {
    /// Reopen the audit file at its path on every SIGUSR1 (an external logrotate moved it away), until the
    /// runtime ends. Call it from within the runtime.
    pub(crate) fn reopen_on_sigusr1(&self) {
        let queue = self.queue.clone();
        tokio::spawn(async move {
            use tokio::signal::unix::{SignalKind, signal};
            let Ok(mut usr1) = signal(SignalKind::user_defined1()) else {
                tracing::warn!("cannot listen for SIGUSR1: the audit file is not reopened on it");
                return;
            };
            while usr1.recv().await.is_some() {
                queue.reopen();
            }
        });
    }

    /// Have the writer sign its checkpoints with `signer` from now on.
    pub(crate) fn sign_checkpoints(&self, signer: audit::chain::CheckpointSigner) {
        self.queue.sign_with(signer);
    }
}

/// Lines the audit writer holds before requests wait for it.
const AUDIT_QUEUE: usize = 65_536;
/// How long the audit thread rests after each batch: under load, records handed over meanwhile wake
/// nobody and go out together in the next batch.
const AUDIT_PAUSE: std::time::Duration = std::time::Duration::from_millis(2);

/// Install the global subscriber for operational logs (verbosity from `CORDON_LOG`, default `info`) and
/// start the audit writer.
/// `format` (`log.format`) chooses human-readable lines or one JSON object per line.
pub(crate) fn init(audit_to: &AuditConfig, chain: &AuditChain, format: LogFormat) -> Result<Audit, String> {
    let ops_filter = EnvFilter::try_from_env("CORDON_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,hickory_server=warn,hickory_proto=warn"));
    let ops = match format {
        LogFormat::Text => fmt::layer()
            .with_writer(std::io::stderr)
            .with_target(false)
            // Colour on a terminal only, and never under NO_COLOR (an explicit with_ansi overrides the
            // crate's own NO_COLOR check): the rule of the commands' output (src/cli/style.rs).
            .with_ansi(anstream::AutoStream::choice(&std::io::stderr()) != anstream::ColorChoice::Never)
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
    let (out, tail): (Box<dyn audit_writer::Output>, _) = match audit_to {
        AuditConfig::Stdout => (Box::new(std::io::stdout()), None),
        AuditConfig::File(path) => {
            let fail = |e: std::io::Error| format!("cannot open the audit file {}: {e}", path.display());
            let tail = continued_tail(path).map_err(fail)?;
            if tail.cut_short {
                // The last run was killed in the middle of a line: end it, so the next line stands alone.
                let mut file = OpenOptions::new().append(true).open(path).map_err(fail)?;
                std::io::Write::write_all(&mut file, b"\n").map_err(fail)?;
            }
            let r = &chain.rotation;
            let rotation = audit::file::Rotation {
                size: r.size,
                every: r.every,
                keep_files: r.keep_files,
                keep_for: r.keep_for,
                compress: r.compress,
            };
            (
                Box::new(audit::file::AuditFile::open(path, rotation).map_err(fail)?),
                tail.tail,
            )
        }
    };
    let chaining = chain.enabled.then(|| audit_writer::Chaining {
        chain: audit::chain::Chain::after(tail).awaiting_key(chain.signing_key.is_some()),
        checkpoint_every: chain.checkpoint_interval,
        continued: tail.is_some(),
    });
    let spool = match &chain.otlp {
        Some(otlp) => {
            let fail = |e: std::io::Error| format!("audit.export.otlp.spool: cannot use {}: {e}", otlp.spool.display());
            Some(audit::spool::Spool::open(&otlp.spool, otlp.spool_max).map_err(fail)?)
        }
        None => None,
    };
    let tee = match &spool {
        Some(s) => Some(
            audit::spool::SpoolWriter::new(s.clone())
                .map_err(|e| format!("audit.export.otlp.spool: cannot read its folder: {e}"))?,
        ),
        None => None,
    };
    let (queue, flusher) = audit_writer::start("cordon-audit", out, AUDIT_QUEUE, AUDIT_PAUSE, chaining, tee)
        .map_err(|e| format!("cannot start the audit thread: {e}"))?;
    tracing_subscriber::registry()
        .with(ops)
        .try_init()
        .map_err(|e| format!("logging was already set up: {e}"))?;
    Ok(Audit {
        sink: Arc::new(LineSink::new(queue.clone())),
        queue,
        spool,
        _flush: flusher,
    })
}

/// What the end of an existing audit file says.
struct AuditFileEnding {
    /// The chain to continue, if the file has one.
    tail: Option<audit::chain::Tail>,
    /// Whether the file ends in the middle of a line.
    cut_short: bool,
}

/// Read the end of the audit file at `path` (the last 1 MiB at most), if it exists.
fn continued_tail(path: &std::path::Path) -> std::io::Result<AuditFileEnding> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(AuditFileEnding {
                tail: None,
                cut_short: false,
            });
        }
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(1 << 20)))?;
    let mut end = Vec::new();
    file.read_to_end(&mut end)?;
    Ok(AuditFileEnding {
        tail: audit::chain::tail_of(&end),
        cut_short: end.last().is_some_and(|b| *b != b'\n'),
    })
}
