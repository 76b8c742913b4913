//! `audit.export.otlp`: audit records shipped to a log pipeline as OpenTelemetry logs over OTLP/HTTP, as
//! written and validated (the collector's URL, its headers' secrets, batching and the spool).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::credentials::{RawSecretRef, SecretRef, secret_ref};
use super::errors::Errors;
use super::fields::{A_COUNT, bytes, duration, is_loopback, whole};
use super::scalars::Whole;
use super::shapes;

/// `audit.export:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawExport {
    /// OpenTelemetry logs over OTLP/HTTP.
    pub(crate) otlp: Option<RawOtlp>,
}

/// `audit.export.otlp:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawOtlp {
    /// The collector's logs URL, e.g. `https://collector:4318/v1/logs`.
    #[schemars(with = "Option<shapes::HttpUrl>")]
    pub(crate) endpoint: Option<String>,
    /// Headers sent with every export (an API key), their values from secret sources.
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, RawSecretRef>,
    /// PEM roots to trust for the collector, besides the web's.
    pub(crate) ca_file: Option<String>,
    /// Records per export request at most.
    pub(crate) batch: Option<Whole>,
    /// How long records wait at most for a batch to fill.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) interval: Option<String>,
    /// How long one export request may take.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) timeout: Option<String>,
    /// `service.instance.id` of the records (default: the host name).
    pub(crate) instance: Option<String>,
    /// Where records wait for the collector.
    #[serde(default)]
    pub(crate) spool: RawSpool,
}

/// `audit.export.otlp.spool:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawSpool {
    /// A folder of its own.
    pub(crate) path: Option<String>,
    /// The most it holds, e.g. `256MiB`.
    #[schemars(with = "Option<shapes::Size>")]
    pub(crate) max: Option<String>,
}

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

/// Records per export request by default, and at most.
const BATCH: usize = 512;

const BATCH_MAX: usize = 10_000;

/// `audit.export.otlp`, for records written to `audit_file` (`None`: standard output).
pub(super) fn otlp(errs: &mut Errors, raw: RawOtlp, audit_file: Option<&Path>) -> Option<OtlpExport> {
    let at = "audit.export.otlp";
    let endpoint = match raw.endpoint.as_deref().map(str::parse::<http::Uri>) {
        None => {
            errs.at(
                format!("{at}.endpoint"),
                "is missing; give the collector's logs URL, e.g. http://127.0.0.1:4318/v1/logs",
            );
            None
        }
        Some(Err(e)) => {
            errs.at(format!("{at}.endpoint"), format!("is not a URL: {e}"));
            None
        }
        Some(Ok(uri)) => match (uri.scheme_str(), uri.host()) {
            (Some("http" | "https"), Some(_)) if uri.query().is_none() => Some(uri),
            _ => {
                errs.at(
                    format!("{at}.endpoint"),
                    format!("{uri} must be an http:// or https:// URL with a host and no query"),
                );
                None
            }
        },
    };
    let mut headers = Vec::new();
    for (name, value) in raw.headers {
        let path = format!("{at}.headers.{name}");
        match http::HeaderName::from_bytes(name.as_bytes()) {
            Ok(h) => {
                if let Some(r) = secret_ref(errs, &path, value) {
                    headers.push((h, r));
                }
            }
            Err(_) => errs.at(path, format!("{name:?} is not a header name")),
        }
    }
    if let Some(uri) = &endpoint
        && uri.scheme_str() == Some("http")
        && !is_loopback(uri.host().unwrap_or(""))
    {
        if headers.is_empty() {
            errs.warn(
                format!("{at}.endpoint"),
                "sends records (they name users, sandboxes and hosts) in plaintext off this host; prefer https://",
            );
        } else {
            errs.at(
                format!("{at}.endpoint"),
                "would send the headers' secrets in plaintext off this host; use https:// (http:// only to loopback)",
            );
        }
    }
    let mut roots = Vec::new();
    if let Some(file) = raw.ca_file {
        match crate::tls::pem::read_pem_certs(&errs.path(&file)) {
            Ok(certs) if certs.is_empty() => {
                errs.at(format!("{at}.ca_file"), format!("{file}: holds no PEM certificate"))
            }
            Ok(certs) => roots = certs,
            Err(e) => errs.at(format!("{at}.ca_file"), format!("{file}: {e}")),
        }
    }
    let given = whole(errs, &format!("{at}.batch"), raw.batch, A_COUNT);
    let batch = match given.map(usize::try_from) {
        None => BATCH,
        Some(Ok(n)) if (1..=BATCH_MAX).contains(&n) => n,
        Some(_) => {
            errs.at(
                format!("{at}.batch"),
                format!("{} must be between 1 and {BATCH_MAX}", given.unwrap_or_default()),
            );
            BATCH
        }
    };
    let spool = match (raw.spool.path, audit_file) {
        (Some(p), _) if !p.trim().is_empty() => Some(errs.path(&p)),
        (Some(_), _) => {
            errs.at(
                format!("{at}.spool.path"),
                "is empty; give a folder for records waiting to be sent",
            );
            None
        }
        (None, Some(file)) => Some(PathBuf::from(format!("{}.spool", file.display()))),
        (None, None) => {
            errs.at(
                format!("{at}.spool.path"),
                "is needed when audit records go to standard output: give a folder where records wait for the \
                 collector (with audit.path a file, it defaults to AUDIT_PATH.spool)",
            );
            None
        }
    };
    let instance = raw.instance.filter(|i| {
        let ok = !i.trim().is_empty();
        if !ok {
            errs.at(format!("{at}.instance"), "is empty; leave it out to use the host name");
        }
        ok
    });
    // Every field is checked before any missing one ends it, so every problem is reported at once.
    let interval = duration(errs, &format!("{at}.interval"), raw.interval, Duration::from_secs(1));
    let timeout = duration(errs, &format!("{at}.timeout"), raw.timeout, Duration::from_secs(10));
    let spool_max = bytes(errs, &format!("{at}.spool.max"), raw.spool.max).unwrap_or(256 << 20);
    Some(OtlpExport {
        endpoint: endpoint?,
        headers,
        roots,
        batch,
        interval,
        timeout,
        instance,
        spool_max,
        spool: spool?,
    })
}
