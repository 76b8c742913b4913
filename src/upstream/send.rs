//! Sending a policed request upstream through the sandbox's pool, and telling what went wrong when it fails.

use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;

use super::pool::UpstreamClient;
use crate::body::ProxyBody;
use crate::error::ProxyError;
use crate::net::DialError;

/// Send within `timeout` (`timeouts.upstream_headers`: the response head must arrive by then).
pub(crate) async fn send(
    pool: &UpstreamClient,
    req: Request<ProxyBody>,
    timeout: Duration,
) -> Result<Response<Incoming>, ProxyError> {
    match tokio::time::timeout(timeout, pool.request(req)).await {
        Ok(Ok(resp)) => Ok(resp),
        Ok(Err(e)) => Err(upstream_error(&e)),
        Err(_) => Err(ProxyError::UpstreamTimeout),
    }
}

/// Find what went wrong in a pool error: a guard refusal or dial failure from our connector, an
/// untrusted upstream certificate, or anything else.
pub(crate) fn upstream_error(err: &hyper_util::client::legacy::Error) -> ProxyError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    let mut detail = Vec::new();
    let mut in_request_body = false;
    while let Some(e) = source {
        detail.push(e.to_string());
        if let Some(h) = e.downcast_ref::<hyper::Error>() {
            // The request body being sent failed, and under that is hyper's own error from reading it off the
            // sandbox's connection: the client broke its body off (or the framing guard cut a malformed chunked
            // body), which is the client's fault (400), not the upstream's (502).
            if in_request_body {
                return ProxyError::BadRequest {
                    code: crate::reason::Reason::BodyIncomplete,
                    message: format!("the request body broke off: {h}"),
                };
            }
            in_request_body = h.is_user();
        }
        if let Some(dial) = e.downcast_ref::<DialError>() {
            return ProxyError::Dial(dial.duplicate());
        }
        if e.downcast_ref::<super::pool::HandshakeTimedOut>().is_some() {
            return ProxyError::HandshakeTimeout;
        }
        if let Some(rustls::Error::InvalidCertificate(reason)) = find_rustls(e) {
            return ProxyError::UpstreamCertificate(format!("{reason:?}"));
        }
        source = e.source();
    }
    ProxyError::Upstream(detail.join(": "))
}

/// rustls errors reach us wrapped in I/O errors (tokio-rustls, then hyper-rustls wraps that again), and
/// `io::Error::source` skips the wrapped error itself: unwrap them by hand.
fn find_rustls<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    if let Some(r) = e.downcast_ref::<rustls::Error>() {
        return Some(r);
    }
    let mut io = e.downcast_ref::<std::io::Error>();
    while let Some(inner) = io.and_then(|i| i.get_ref()) {
        if let Some(r) = inner.downcast_ref::<rustls::Error>() {
            return Some(r);
        }
        io = inner.downcast_ref::<std::io::Error>();
    }
    None
}
