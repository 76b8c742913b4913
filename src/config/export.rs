//! `audit.export.otlp`: audit records shipped to a log pipeline as OpenTelemetry logs over OTLP/HTTP.

use std::path::PathBuf;
use std::time::Duration;

use super::credentials::SecretRef;

/// Where and how records are shipped.
#[derive(Debug, Clone)]
pub(crate) struct OtlpExport {
    /// The collector's logs URL (`http(s)://host:port/v1/logs`).
    pub(crate) endpoint: http::Uri,
    /// Headers sent with every request, their values read from secret sources at start.
    pub(crate) headers: Vec<(http::HeaderName, SecretRef)>,
    /// Roots trusted for the collector besides the web's (`ca_file`).
    pub(crate) roots: Vec<rustls_pki_types::CertificateDer<'static>>,
    /// Records per request at most.
    pub(crate) batch: usize,
    /// How long records wait at most for a batch to fill.
    pub(crate) interval: Duration,
    /// How long one request may take.
    pub(crate) timeout: Duration,
    /// `service.instance.id` (default: the host name).
    pub(crate) instance: Option<String>,
    /// The spool's folder.
    pub(crate) spool: PathBuf,
    /// The most the spool holds.
    pub(crate) spool_max: u64,
}
