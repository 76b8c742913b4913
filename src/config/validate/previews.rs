//! Validation of `previews:` and `listen.preview`.

use std::net::SocketAddr;
use std::time::Duration;

use super::fields::{Errors, duration, secret_ref};
use crate::config::previews::Previews;
use crate::config::raw::{RawPreviews, Whole};

/// `previews:` for a preview listener at `listen` (if any).
pub(super) fn previews(errs: &mut Errors, raw: Option<RawPreviews>, listen: Option<SocketAddr>) -> Option<Previews> {
    let (raw, listen) = match (raw, listen) {
        (None, None) => return None,
        (Some(_), None) => {
            errs.at(
                "previews",
                "is set but listen.preview is not; give the preview listener an address",
            );
            return None;
        }
        (None, Some(_)) => {
            errs.at(
                "listen.preview",
                "is set but `previews` is not; write at least `previews: { domain: preview.example.com }`",
            );
            return None;
        }
        (Some(raw), Some(listen)) => (raw, listen),
    };
    let before = errs.list.len();
    let domain = match raw.domain {
        None => {
            errs.at(
                "previews.domain",
                "is missing; previews are named <port>-<sandbox>.<domain>",
            );
            String::new()
        }
        Some(d) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            let label_ok = |l: &str| {
                !l.is_empty()
                    && l.len() <= 63
                    && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            };
            if d.split('.').count() < 2 || !d.split('.').all(label_ok) {
                errs.at(
                    "previews.domain",
                    format!("{d:?} is not a domain name (e.g. preview.example.com)"),
                );
            }
            d
        }
    };
    let tls = raw.tls.and_then(|t| {
        let cert = secret_ref(errs, "previews.tls.cert", t.cert);
        let key = secret_ref(errs, "previews.tls.key", t.key);
        Some((cert?, key?))
    });
    if tls.is_none() && !listen.ip().is_loopback() {
        errs.at(
            "previews.tls",
            format!(
                "is missing and listen.preview ({listen}) is not a loopback address: preview cookies are Secure, so \
                 previews are served over HTTPS (plain HTTP only on loopback, for tests)"
            ),
        );
    }
    let key = raw.key.and_then(|k| secret_ref(errs, "previews.key", k));
    let link_ttl = duration(errs, "previews.link_ttl", raw.link_ttl, Duration::from_secs(300));
    let session_ttl = duration(errs, "previews.session_ttl", raw.session_ttl, Duration::from_secs(3600));
    for (path, d, most) in [
        ("previews.link_ttl", link_ttl, Duration::from_secs(24 * 3600)),
        ("previews.session_ttl", session_ttl, Duration::from_secs(7 * 24 * 3600)),
    ] {
        if d > most {
            errs.at(path, format!("must be at most {}", humantime::format_duration(most)));
        }
    }
    (errs.list.len() == before).then_some(Previews {
        domain,
        tls,
        key,
        link_ttl,
        session_ttl,
    })
}

/// `policies.NAME.expose`: ports 1 to 65535, each once.
pub(super) fn expose(errs: &mut Errors, policy: &str, raw: Option<Vec<Whole>>) -> Vec<u16> {
    let mut out = Vec::new();
    for (i, p) in raw.unwrap_or_default().into_iter().enumerate() {
        let at = format!("policies.{policy}.expose[{i}]");
        let Some(p) = super::fields::whole(errs, &at, Some(p), super::fields::A_PORT) else {
            continue;
        };
        match u16::try_from(p) {
            Ok(port) if port > 0 && !out.contains(&port) => out.push(port),
            Ok(port) if port > 0 => errs.at(
                format!("policies.{policy}.expose[{i}]"),
                format!("{port} is listed twice"),
            ),
            _ => errs.at(
                format!("policies.{policy}.expose[{i}]"),
                format!("{p} is not a port (1 to 65535)"),
            ),
        }
    }
    out
}
