//! Answers written below hyper, as raw HTTP/1.1 bytes that close the connection: refused framing, the
//! connection cap, unauthenticated connections over their limit. Each answer's status is its reason's, from the
//! registry, and it says what every other refusal says (the `cordon.refusal/1` facts, as text, and the same
//! `x-cordon-*` headers): nothing of the request is known here, so what was refused is not named.

use http::HeaderMap;

use super::REASON_HEADER;
use super::refusal::{Facts, Format, Subject};
use super::status_of;
use crate::framing::FramingViolation;
use crate::reason::Reason;

/// A complete raw HTTP/1.1 response for `reason` that closes the connection, for answers written below hyper,
/// `retry_after` seconds given for a limit.
fn raw_response(reason: Reason, retry_after: Option<u64>, message: &str) -> Vec<u8> {
    let status = status_of(reason);
    let refused = Subject::default();
    let facts = Facts {
        reason,
        status: status.as_u16(),
        message: message.to_string(),
        refused: &refused,
        retry_after,
        details: &[],
    };
    let (content_type, body) = facts.body(Format::Text);
    let mut headers = HeaderMap::new();
    facts.headers(&mut headers);
    let mut extra = String::new();
    if let Some(secs) = retry_after {
        extra.push_str(&format!("retry-after: {secs}\r\n"));
    }
    for (name, value) in &headers {
        // Header-safe by construction (printable ASCII, bounded); anything else is left out rather than sent.
        if let Ok(v) = value.to_str() {
            extra.push_str(&format!("{name}: {v}\r\n"));
        }
    }
    format!(
        "HTTP/1.1 {} {}\r\n{extra}content-type: {content_type}\r\n{REASON_HEADER}: {}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        reason.code(),
        body.len()
    )
    .into_bytes()
}

/// The answer to a request whose framing the byte-level guard refused (400, 414 for an overlong target, 431 for
/// an oversized head: the registry's answer to the violation's reason).
pub(crate) fn render_framing(v: &FramingViolation) -> Vec<u8> {
    raw_response(v.reason(), None, &format!("malformed request: {v}"))
}

/// The answer to a connection over the connection cap.
pub(crate) fn render_overloaded() -> Vec<u8> {
    raw_response(
        Reason::TooManyConnections,
        None,
        "too many open connections; try again shortly",
    )
}

/// The answer to a connection from an address with `limits.per_source.unauthenticated` connections that
/// have not authenticated yet.
pub(crate) fn render_unauthenticated_limit() -> Vec<u8> {
    raw_response(
        Reason::UnauthenticatedLimit,
        // A place frees as soon as one of them sends its first request or closes.
        Some(1),
        "too many connections from this address have not authenticated yet (limits.per_source.unauthenticated); \
         send a request on the ones open, or close them",
    )
}

/// The status a framing violation is answered with, for the audit record: its reason's.
pub(crate) fn framing_status(v: &FramingViolation) -> http::StatusCode {
    status_of(v.reason())
}

/// The reason of a request hyper could not parse (it answered it itself): a head over hyper's own bounds (100
/// headers, its read buffer) is `head_too_large`, which hyper answers 431; anything else `unparseable_request`,
/// answered 400. (hyper's 414 for a target over 65534 bytes cannot happen behind the framing guard, which
/// refuses such a target itself as `uri_too_long`.)
pub(crate) fn hyper_parse_reason(e: &hyper::Error) -> Reason {
    if e.is_parse_too_large() {
        Reason::HeadTooLarge
    } else {
        Reason::UnparseableRequest
    }
}

/// The status hyper answered a request it could not parse with, for the audit record: its reason's.
pub(crate) fn hyper_parse_status(e: &hyper::Error) -> http::StatusCode {
    status_of(hyper_parse_reason(e))
}
