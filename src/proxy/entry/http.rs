//! One client connection of HTTP/1.1: hyper's server behind the byte-level framing guard. On the explicit
//! proxy port each request is absolute-form HTTP or a CONNECT; on the transparent listener, plain HTTP in
//! origin form whose host is its `Host` header and whose port is the connection's original destination.

use std::convert::Infallible;
use std::sync::Arc;

use http::header::PROXY_AUTHORIZATION;
use http::{Method, Request, Response};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use super::connect;
use crate::addr::{ClientAddr, OriginalDst};
use crate::audit::Kind;
use crate::body::{self, ProxyBody};
use crate::error::{self, ProxyError};
use crate::framing::FramingGuard;
use crate::identity;
use crate::limits::Waiting;
use crate::proxy::headers;
use crate::proxy::tunnel::scope::ConnScope;
use crate::proxy::{self, Claim, Input, Intent};
use crate::reason::Reason;
use crate::state::ProxyState;
use crate::target::Target;

/// Serve a connection to the explicit proxy port until the client closes it, shutdown asks it to finish,
/// the drain deadline cuts it, or a sandbox it served loses access. `waiting` is its place among its
/// address's unauthenticated connections, given back once it authenticates.
pub(crate) async fn serve(
    state: Arc<ProxyState>,
    stream: TcpStream,
    client: ClientAddr,
    graceful: CancellationToken,
    waiting: Option<Waiting>,
) {
    serve_http(state, stream, client, graceful, None, waiting).await;
}

/// Serve plain HTTP that reached the transparent listener, redirected from `original`.
pub(crate) async fn serve_transparent(
    state: Arc<ProxyState>,
    stream: TcpStream,
    client: ClientAddr,
    original: OriginalDst,
    graceful: CancellationToken,
) {
    serve_http(state, stream, client, graceful, Some(original), None).await;
}

async fn serve_http(
    state: Arc<ProxyState>,
    stream: TcpStream,
    client: ClientAddr,
    graceful: CancellationToken,
    original: Option<OriginalDst>,
    waiting: Option<Waiting>,
) {
    let generation = state.current();
    let first_head = generation.config.timeouts.first_request_headers;
    let (guarded, report) = FramingGuard::new(
        stream,
        generation.config.limits.max_request_header_bytes,
        error::render_framing,
    );
    let scope = ConnScope::new(original, waiting);
    let svc_state = state.clone();
    let svc_scope = scope.clone();
    let service = service_fn(move |req: Request<Incoming>| {
        let (state, scope) = (svc_state.clone(), svc_scope.clone());
        async move { Ok::<_, Infallible>(route(state, scope, client, req).await) }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        // SECURITY: slowloris: a client that trickles its request head is cut off.
        .header_read_timeout(generation.config.timeouts.request_headers);
    drop(generation);
    let conn = builder.serve_connection(TokioIo::new(guarded), service).with_upgrades();
    tokio::pin!(conn);
    let cut = scope.cut().clone();
    // SECURITY: a connection that says nothing is closed sooner than a slow head of a known client: until its
    // first request head it costs a slot and has proven nothing.
    let heard = scope.heard().clone();
    let silent = async move {
        tokio::select! {
            () = tokio::time::sleep(first_head) => {}
            () = heard.cancelled() => std::future::pending::<()>().await,
        }
    };
    let result = tokio::select! {
        r = conn.as_mut() => r,
        () = silent => {
            tracing::debug!(%client, "no request head within timeouts.first_request_headers; closed");
            Ok(())
        }
        // SECURITY: a revoked sandbox's keep-alive connection is closed, not left to carry on.
        () = cut.cancelled() => Ok(()),
        () = graceful.cancelled() => {
            conn.as_mut().graceful_shutdown();
            tokio::select! {
                r = conn.as_mut() => r,
                () = state.hard_stop.cancelled() => Ok(()),
                () = cut.cancelled() => Ok(()),
            }
        }
    };
    // Ends the watcher tasks; the leases go with the scope.
    cut.cancel();
    proxy::malformed(&state, client, &report, &result);
    if let Err(e) = result {
        tracing::debug!(%client, "client connection ended: {e}");
    }
}

async fn route(
    state: Arc<ProxyState>,
    scope: Arc<ConnScope>,
    client: ClientAddr,
    req: Request<Incoming>,
) -> Response<ProxyBody> {
    scope.heard_one();
    let input = match scope.original_dst {
        Some(original) => transparent(req, original, client, scope),
        None if req.method() == Method::CONNECT => return connect::connect(state, scope, client, req).await,
        None => explicit(req, client, scope),
    };
    proxy::run(&state, input).await.into_response()
}

/// An absolute-form request to the explicit proxy port.
fn explicit(req: Request<Incoming>, client: ClientAddr, scope: Arc<ConnScope>) -> Input {
    let target = if req.uri().scheme().is_none() {
        Err(ProxyError::NotProxyRequest)
    } else {
        Target::from_absolute_uri(req.uri()).map_err(ProxyError::from)
    };
    Input {
        kind: Kind::Http,
        client,
        original_dst: None,
        conn: Some(scope),
        claim: Claim::Credentials(identity::credentials(req.headers())),
        target,
        intent: Intent::Request {
            req: req.map(body::boxed),
            inside: None,
        },
    }
}

/// A transparent client's origin-form request, as the absolute-form request an explicit client would have
/// sent: the host from `Host`, the port from the original destination.
fn transparent(req: Request<Incoming>, original: OriginalDst, client: ClientAddr, scope: Arc<ConnScope>) -> Input {
    let (mut parts, body) = req.into_parts();
    let target = absolute(&mut parts, original);
    // SECURITY: a transparent sandbox is known by its address only; credentials it sends are not looked at.
    parts.headers.remove(PROXY_AUTHORIZATION);
    Input {
        kind: Kind::Http,
        client,
        original_dst: Some(original),
        conn: Some(scope),
        claim: Claim::Source,
        target,
        intent: Intent::Request {
            req: Request::from_parts(parts, body::boxed(body)),
            inside: None,
        },
    }
}

/// The target of a transparent request, with its URI rewritten in absolute form.
fn absolute(parts: &mut http::request::Parts, original: OriginalDst) -> Result<Target, ProxyError> {
    let bad = |code, message: &str| ProxyError::BadRequest {
        code,
        message: message.into(),
    };
    if parts.method == Method::CONNECT {
        return Err(bad(
            Reason::ConnectTransparent,
            "CONNECT is for the explicit proxy port, not here",
        ));
    }
    let Some(host) = headers::single_host(&parts.headers)? else {
        return Err(bad(Reason::MissingHost, "the request needs exactly one Host header"));
    };
    let target = Target::from_host_value(host.as_bytes(), original.port())?;
    // SECURITY: the port is the one the sandbox connected to; a Host naming another would let a request
    // allowed on one port be forwarded to another.
    if target.port != original.port() {
        return Err(bad(
            Reason::HostPortMismatch,
            "the Host header names another port than the connection's",
        ));
    }
    if let Some(authority) = parts.uri.authority()
        && Target::from_host_value(authority.as_str().as_bytes(), original.port()).ok() != Some(target.clone())
    {
        return Err(ProxyError::Misdirected(target));
    }
    let pq = parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    parts.uri = format!("http://{target}{pq}")
        .parse()
        .map_err(|_| bad(Reason::BadTarget, "the request target is not a valid path"))?;
    Ok(target)
}
