//! Header hygiene between the sandbox and the upstream.
//!
//! `Proxy-Authorization`, `Proxy-Connection` and hop-by-hop headers never reach the upstream, nor do the
//! headers `Connection` nominates, nor anything claiming to come from cordon. `Proxy-Authenticate` from an
//! upstream never reaches the sandbox.

use http::HeaderValue;
use http::header::{self, HeaderMap, HeaderName};

use crate::error::ProxyError;
use crate::reason::Reason;

/// Request headers with this prefix claim to come from cordon; a sandbox may not send them.
pub(crate) const CORDON_PREFIX: &str = "x-cordon-";

/// Hop-by-hop headers (RFC 9110 §7.6.1) plus the proxy-specific ones, as names (removing by name skips
/// parsing a string on every request). `Trailer` is end to end (RFC 9110 §6.6.2): it announces the trailers
/// an HTTP/1.1 receiver will get, and without it hyper sends none.
static HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("proxy-connection"),
    HeaderName::from_static("keep-alive"),
    header::PROXY_AUTHORIZATION,
    header::PROXY_AUTHENTICATE,
    header::TE,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

/// Headers a `Connection` list may not strip: dropping them would change what the request means.
const NOT_NOMINATABLE: [&str; 2] = ["host", "content-length"];

/// The request's one `Host` header, if it has one. The byte-level framing guard has already refused CL+TE
/// and duplicate Content-Length; this is for what survives into the header map.
pub(crate) fn single_host(headers: &HeaderMap) -> Result<Option<&HeaderValue>, ProxyError> {
    let mut all = headers.get_all(header::HOST).iter();
    match (all.next(), all.next()) {
        // SECURITY: two Host headers can be read differently by cordon and the upstream (host confusion).
        (_, Some(_)) => Err(ProxyError::BadRequest {
            code: Reason::DuplicateHost,
            message: "more than one Host header".into(),
        }),
        (one, None) => Ok(one),
    }
}

/// Remove what must not travel upstream, after reading what `Connection` nominates.
pub(crate) fn strip_request(headers: &mut HeaderMap) {
    // `TE: trailers` is the one TE value that is end-to-end in practice (gRPC needs it over h2).
    let te_trailers = headers
        .get(header::TE)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"trailers"));
    strip_hop_by_hop(headers);
    if te_trailers {
        headers.insert(header::TE, http::HeaderValue::from_static("trailers"));
    }
    // SECURITY: identity spoofing — a sandbox cannot pass itself off as cordon to the upstream.
    let claimed: Vec<HeaderName> = headers
        .keys()
        .filter(|n| n.as_str().starts_with(CORDON_PREFIX))
        .cloned()
        .collect();
    for name in claimed {
        headers.remove(name);
    }
}

/// Remove what must not travel back to the sandbox.
pub(crate) fn strip_response(headers: &mut HeaderMap) {
    strip_hop_by_hop(headers);
}

fn strip_hop_by_hop(headers: &mut HeaderMap) {
    // Most messages carry none of these: look before removing (a removal of an absent name still hashes
    // and probes the map, nine times per message).
    if !headers.keys().any(|k| HOP_BY_HOP.contains(k)) {
        return;
    }
    let nominated: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .filter(|t| !NOT_NOMINATABLE.contains(&t.as_str()))
        .filter_map(|t| HeaderName::from_bytes(t.as_bytes()).ok())
        .collect();
    for name in nominated {
        headers.remove(name);
    }
    for name in &HOP_BY_HOP {
        headers.remove(name);
    }
}

#[cfg(test)]
#[path = "headers_tests.rs"]
mod tests;
