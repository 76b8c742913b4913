//! Forwarding a policed request upstream, for plain absolute-form HTTP and for requests inside an
//! intercepted CONNECT alike: through the sandbox's pool, with hop-by-hop headers stripped both ways and
//! the response streamed back carrying its audit record.

use std::net::SocketAddr;
use std::sync::Arc;

use http::header::HOST;
use http::uri::{PathAndQuery, Scheme};
use http::{Request, Response, Uri, Version};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use crate::audit::Kind;
use crate::body::{Counted, ProxyBody};
use crate::conn::ConnScope;
use crate::error::ProxyError;
use crate::exchange::Exchange;
use crate::headers;
use crate::net::DialError;
use crate::state::ProxyState;
use crate::target::{Target, check_path};
use crate::upstream::pool::{Dialled, SandboxClients, UpstreamClient};

/// Serve one absolute-form `http://` request.
pub async fn forward(
    state: Arc<ProxyState>,
    scope: Arc<ConnScope>,
    client: SocketAddr,
    req: Request<Incoming>,
) -> Response<ProxyBody> {
    let mut ex = Exchange::new(state, client, Kind::Http, req.method()).on_connection(scope);
    match police(&mut ex, req).await {
        Ok((pools, outgoing)) => relay(ex, &pools.any, outgoing).await,
        Err(e) => ex.fail(e),
    }
}

async fn police(
    ex: &mut Exchange,
    req: Request<Incoming>,
) -> Result<(Arc<SandboxClients>, Request<ProxyBody>), ProxyError> {
    if req.uri().scheme().is_none() {
        return Err(ProxyError::NotProxyRequest);
    }
    // Parsed before identification so that even a 407 is audited with its destination; its errors are
    // reported after identification, so an unauthenticated client learns nothing from them.
    let target = Target::from_absolute_uri(req.uri());
    if let Ok(t) = &target {
        ex.set_target(t);
        ex.record().path = Some(req.uri().path().to_string());
    }
    let sandbox = ex.identify(req.headers())?;
    let target = target?;
    ex.admit(&sandbox, &target)?;
    let path = req.uri().path().to_string();
    check_path(&path)?;
    headers::check_request(req.headers())?;
    let rule = ex.decide(&sandbox, &target, Some((req.method(), &path)))?;
    // No separate lookup here: the pool's connector resolves, refuses (before any connection is made) or
    // dials the checked address, and its refusal comes back as the same 403.
    let pools = ex.generation.upstreams.for_sandbox(&sandbox.id);
    let mut out = outgoing(ex, req, Scheme::HTTP, &target, 80)?;
    ex.approve(&sandbox, &target, rule, &mut out).await?;
    // SECURITY: never over cleartext — plain HTTP gets no credential, and a placeholder in it is refused.
    ex.credentials(&sandbox, &target, false, &mut out).await?;
    Ok((pools, out))
}

/// The request as it goes upstream: hop-by-hop headers stripped, Host from the target (RFC 9112 §3.2.2:
/// the absolute-form authority wins over whatever Host said), absolute URI for the pool.
pub fn outgoing(
    ex: &Exchange,
    req: Request<Incoming>,
    scheme: Scheme,
    target: &Target,
    default_port: u16,
) -> Result<Request<ProxyBody>, ProxyError> {
    let (mut parts, body) = req.into_parts();
    headers::strip_request(&mut parts.headers);
    parts.headers.remove(HOST);
    let pq = parts
        .uri
        .path_and_query()
        .cloned()
        .unwrap_or_else(|| PathAndQuery::from_static("/"));
    parts.uri = Uri::builder()
        .scheme(scheme)
        .authority(target.authority(default_port))
        .path_and_query(pq)
        .build()
        .map_err(|e| ProxyError::BadRequest {
            code: "bad_host",
            message: format!("the destination cannot be written as a URI: {e}"),
        })?;
    parts.version = Version::HTTP_11;
    let body = Counted::new(body, ex.up_counter(), None::<()>)
        .metered(ex.meter.clone(), true)
        .boxed_unsync();
    Ok(Request::from_parts(parts, body))
}

/// Send upstream and stream the response back; the audit record is emitted when the body ends.
pub async fn relay(ex: Exchange, pool: &UpstreamClient, req: Request<ProxyBody>) -> Response<ProxyBody> {
    match send(&ex, pool, req).await {
        Ok(resp) if !ex.echo.is_empty() => {
            let masked = crate::credentials::echo::mask(resp, &ex.echo).await;
            respond(ex, masked)
        }
        Ok(resp) => respond(ex, resp.map(crate::body::boxed)),
        Err(e) => ex.fail(e),
    }
}

/// Send within `timeouts.upstream_headers`, classifying failures.
pub async fn send(
    ex: &Exchange,
    pool: &UpstreamClient,
    req: Request<ProxyBody>,
) -> Result<Response<Incoming>, ProxyError> {
    let timeout = ex.generation.config.timeouts.upstream_headers;
    match tokio::time::timeout(timeout, pool.request(req)).await {
        Ok(Ok(resp)) => Ok(resp),
        Ok(Err(e)) => Err(upstream_error(&e)),
        Err(_) => Err(ProxyError::UpstreamTimeout),
    }
}

/// Turn an upstream response into the client's, carrying the audit record in its body.
pub fn respond(mut ex: Exchange, resp: Response<ProxyBody>) -> Response<ProxyBody> {
    let (mut parts, body) = resp.into_parts();
    if let Some(Dialled(addr)) = parts.extensions.get::<Dialled>() {
        ex.record().dialled = Some(addr.to_string());
    }
    headers::strip_response(&mut parts.headers);
    ex.record().status = Some(parts.status.as_u16());
    let meter = ex.meter.clone();
    let audit = ex.into_audit();
    let down = audit.down_counter();
    Response::from_parts(
        parts,
        Counted::new(body, down, Some(audit))
            .metered(meter, false)
            .boxed_unsync(),
    )
}

/// Find what went wrong in a pool error: a guard refusal or dial failure from our connector, an
/// untrusted upstream certificate, or anything else.
pub fn upstream_error(err: &hyper_util::client::legacy::Error) -> ProxyError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    let mut detail = Vec::new();
    while let Some(e) = source {
        detail.push(e.to_string());
        if let Some(dial) = e.downcast_ref::<DialError>() {
            return ProxyError::Dial(dial.duplicate());
        }
        if e.downcast_ref::<crate::upstream::pool::HandshakeTimedOut>().is_some() {
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
