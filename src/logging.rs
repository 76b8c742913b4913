//! Two streams: audit records (one JSON line each, to stdout or a file) and operational logs (stderr).

use std::fs::OpenOptions;
use std::io::IsTerminal;
use std::sync::Mutex;

use tracing_subscriber::filter::{EnvFilter, filter_fn};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, fmt};

use crate::audit;
use crate::config::AuditConfig;

/// Install the global subscriber. Operational verbosity comes from `CORDON_LOG` (default `info`).
pub fn init(audit_to: &AuditConfig) -> Result<(), String> {
    let ops_filter = EnvFilter::try_from_env("CORDON_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,hickory_server=warn,hickory_proto=warn"));
    let ops = fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(filter_fn(|m| m.target() != audit::TARGET))
        .with_filter(ops_filter);
    let only_audit = filter_fn(|m| m.target() == audit::TARGET);
    let audit_layer = match audit_to {
        AuditConfig::Stdout => fmt::layer()
            .event_format(audit::LineFormat)
            .with_writer(std::io::stdout)
            .with_filter(only_audit)
            .boxed(),
        AuditConfig::File(path) => {
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| format!("cannot open the audit file {}: {e}", path.display()))?;
            fmt::layer()
                .event_format(audit::LineFormat)
                .with_writer(Mutex::new(file))
                .with_filter(only_audit)
                .boxed()
        }
    };
    tracing_subscriber::registry()
        .with(audit_layer)
        .with(ops)
        .try_init()
        .map_err(|e| format!("logging was already set up: {e}"))
}
