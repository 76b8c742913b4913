//! Answers written below hyper, as raw HTTP/1.1 bytes that close the connection: refused framing, the
//! connection cap, unauthenticated connections over their limit.

use http::StatusCode;

use super::REASON_HEADER;
use crate::framing::FramingViolation;
use crate::reason::Reason;

/// A complete raw HTTP/1.1 response that closes the connection, for answers written below hyper.
fn raw_response(status: StatusCode, code: &str, message: &str) -> Vec<u8> {
    let body = format!("cordon: {message}\n");
    format!(
        "HTTP/1.1 {} {}\r\ncontent-type: text/plain; charset=utf-8\r\n{REASON_HEADER}: {code}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    )
    .into_bytes()
}

/// The answer to a request whose framing the byte-level guard refused (400, or 431 for an oversized head).
pub(crate) fn render_framing(v: &FramingViolation) -> Vec<u8> {
    raw_response(framing_status(v), v.reason().code(), &format!("malformed request: {v}"))
}

/// The answer to a connection over the connection cap.
pub(crate) fn render_overloaded() -> Vec<u8> {
    raw_response(
        StatusCode::SERVICE_UNAVAILABLE,
        Reason::TooManyConnections.code(),
        "too many open connections; try again shortly",
    )
}

/// The answer to a connection from an address with `limits.per_source.unauthenticated` connections that
/// have not authenticated yet.
pub(crate) fn render_unauthenticated_limit() -> Vec<u8> {
    let answer = raw_response(
        StatusCode::TOO_MANY_REQUESTS,
        Reason::UnauthenticatedLimit.code(),
        "too many connections from this address have not authenticated yet (limits.per_source.unauthenticated); \
         send a request on the ones open, or close them",
    );
    // A place frees as soon as one of them sends its first request or closes.
    let mut with_retry = b"HTTP/1.1 429 Too Many Requests\r\nretry-after: 1\r\n".to_vec();
    let status_line = b"HTTP/1.1 429 Too Many Requests\r\n".len();
    with_retry.extend_from_slice(answer.get(status_line..).unwrap_or_default());
    with_retry
}

/// The status a framing violation is answered with, for the audit record.
pub(crate) fn framing_status(v: &FramingViolation) -> StatusCode {
    match v {
        FramingViolation::HeadTooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        _ => StatusCode::BAD_REQUEST,
    }
}

/// The status hyper answered a request it could not parse with.
pub(crate) fn hyper_parse_status(e: &hyper::Error) -> StatusCode {
    if e.is_parse_too_large() {
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
    } else {
        StatusCode::BAD_REQUEST
    }
}
