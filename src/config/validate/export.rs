//! Validation of `audit.export.otlp`: the collector's URL, its headers' secrets, batching and the spool.

use std::path::PathBuf;
use std::time::Duration;

use super::fields::secret_ref;
use super::fields::{Errors, duration};
use super::limits::bytes;
use crate::config::export::OtlpExport;
use crate::config::model::AuditConfig;
use crate::config::raw::RawOtlp;

/// Records per export request by default, and at most.
const BATCH: usize = 512;
const BATCH_MAX: usize = 10_000;

pub(super) fn otlp(errs: &mut Errors, raw: RawOtlp, audit: &AuditConfig) -> Option<OtlpExport> {
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
        && !super::postgres::is_loopback(uri.host().unwrap_or(""))
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
    let given = super::fields::whole(errs, &format!("{at}.batch"), raw.batch, super::fields::A_COUNT);
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
    let spool = match (raw.spool.path, audit) {
        (Some(p), _) if !p.trim().is_empty() => Some(errs.path(&p)),
        (Some(_), _) => {
            errs.at(
                format!("{at}.spool.path"),
                "is empty; give a folder for records waiting to be sent",
            );
            None
        }
        (None, AuditConfig::File(file)) => Some(PathBuf::from(format!("{}.spool", file.display()))),
        (None, AuditConfig::Stdout) => {
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
