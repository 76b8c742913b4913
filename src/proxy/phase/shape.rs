//! Shape: the request as it goes upstream. Hop-by-hop headers stripped, Host from the target (RFC 9112 §3.2.2:
//! the absolute-form authority wins over whatever Host said), an absolute URI for the pool, its body counted
//! (and, for plain HTTP, metered against the sandbox's byte budget); a WebSocket handshake offers no extension;
//! a masked destination is asked for whole, uncompressed answers. Writes `ctx.meter` and `ctx.websocket`, and
//! rewrites the request in flight.

use http::header::{ACCEPT_ENCODING, CONNECTION, HOST, IF_RANGE, RANGE, SEC_WEBSOCKET_EXTENSIONS, UPGRADE};
use http::uri::{PathAndQuery, Scheme};
use http::{HeaderValue, Request, Uri, Version};

use http_body_util::BodyExt;

use crate::body::Counted;
use crate::error::ProxyError;
use crate::proxy::ctx::{Ctx, slot};
use crate::proxy::effects::Effects;
use crate::proxy::headers;
use crate::reason::Reason;

/// Rewrite the request in flight for the upstream.
pub(crate) async fn run(ctx: &mut Ctx, fx: &impl Effects) -> Result<(), ProxyError> {
    let sandbox = slot(&ctx.sandbox)?;
    let intercepted = ctx.intercepted();
    // Plain HTTP bodies count against the sandbox's byte budget here (a tunnel counts at its stream).
    let meter = fx.meter(ctx.kind, sandbox);
    let (scheme, default_port) = if intercepted {
        (Scheme::HTTPS, 443)
    } else {
        (Scheme::HTTP, 80)
    };
    let authority = slot(&ctx.target)?.authority(default_port);
    let counter = ctx.audit.up_counter();
    let masked = !slot(&ctx.permit)?.masked.is_empty();
    let req = crate::proxy::ctx::request(&mut ctx.intent)?;
    // Only inside an interception: a plain request that asks to upgrade is forwarded as a plain request.
    let websocket = intercepted && is_websocket(req);
    let (mut parts, body) = std::mem::replace(req, Request::new(crate::body::empty())).into_parts();
    headers::strip_request(&mut parts.headers);
    parts.headers.remove(HOST);
    let pq = parts
        .uri
        .path_and_query()
        .cloned()
        .unwrap_or_else(|| PathAndQuery::from_static("/"));
    parts.uri = Uri::builder()
        .scheme(scheme)
        .authority(authority)
        .path_and_query(pq)
        .build()
        .map_err(|e| ProxyError::BadRequest {
            code: Reason::BadHost,
            message: format!("the destination cannot be written as a URI: {e}"),
        })?;
    parts.version = Version::HTTP_11;
    if websocket {
        parts.headers.insert(CONNECTION, HeaderValue::from_static("upgrade"));
        parts.headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
        // SECURITY: frames are masked and scanned one by one, so no compression may hide what they say.
        parts.headers.remove(SEC_WEBSOCKET_EXTENSIONS);
    }
    if masked {
        // SECURITY: what comes back from a destination whose secrets are masked comes whole (no Range may split a
        // secret over two answers) and, preferably, uncompressed (a compressed answer is decompressed to be
        // masked).
        for name in [ACCEPT_ENCODING, RANGE, IF_RANGE] {
            parts.headers.remove(name);
        }
    }
    let body = Counted::new(body, counter, None::<()>)
        .metered(meter.clone(), true)
        .boxed_unsync();
    *req = Request::from_parts(parts, body);
    ctx.meter = meter;
    ctx.websocket = websocket;
    Ok(())
}

/// A WebSocket handshake: HTTP/1.1 end to end, and after a 101 the two upgraded streams are spliced.
pub(crate) fn is_websocket<B>(req: &Request<B>) -> bool {
    req.version() == Version::HTTP_11
        && req
            .headers()
            .get(UPGRADE)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"websocket"))
}
