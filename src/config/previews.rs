//! `previews:` and `listen.preview`: the domain preview URLs live under, the preview listener's certificate,
//! the key links and cookies are signed with, and how long each lives; and each policy's `expose:`, the ports
//! previews may open. As written and validated.

use std::net::SocketAddr;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::console::RawCertKey;
use super::credentials::{RawSecretRef, SecretRef, secret_ref};
use super::errors::Errors;
use super::fields::{A_PORT, duration, whole};
use super::scalars::Whole;
use super::shapes;

/// `previews:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawPreviews {
    /// The domain under which `<port>-<sandbox>.<domain>` names each preview.
    pub(crate) domain: Option<String>,
    /// The certificate (PEM chain) and key of the preview listener; without it, plain HTTP on loopback only.
    pub(crate) tls: Option<RawCertKey>,
    /// The key links and cookies are signed with (default: random at each start).
    pub(crate) key: Option<RawSecretRef>,
    /// The longest a link may live, and its default (e.g. `5m`).
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) link_ttl: Option<String>,
    /// How long opening a link gives access (the cookie's life, e.g. `1h`).
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) session_ttl: Option<String>,
}

/// `previews:`, validated.
#[derive(Debug, Clone)]
pub(crate) struct PreviewsConfig {
    /// The domain: a preview is `<port>-<sandbox>.<domain>`. Lower case, no trailing dot.
    pub(crate) domain: String,
    /// The listener's certificate chain and key; `None`: plain HTTP (only on a loopback address).
    pub(crate) tls: Option<(SecretRef, SecretRef)>,
    /// The signing key's source; `None`: a random key made at start.
    pub(crate) key: Option<SecretRef>,
    /// The longest life of a link (and its default).
    pub(crate) link_ttl: Duration,
    /// How long an opened link gives access.
    pub(crate) session_ttl: Duration,
}

/// `previews:` for a preview listener at `listen` (if any).
pub(super) fn previews(
    errs: &mut Errors,
    raw: Option<RawPreviews>,
    listen: Option<SocketAddr>,
) -> Option<PreviewsConfig> {
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
    (errs.list.len() == before).then_some(PreviewsConfig {
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
        let Some(p) = whole(errs, &at, Some(p), A_PORT) else {
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
