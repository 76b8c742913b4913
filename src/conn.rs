//! One client connection: hyper's HTTP/1.1 server behind the byte-level framing guard.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use http::header::{HOST, PROXY_AUTHORIZATION};
use http::{Method, Request, Response};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use crate::audit::{self, Kind};
use crate::body::ProxyBody;
use crate::error::{self, ProxyError};
use crate::exchange::Exchange;
use crate::framing::{FramingGuard, FramingReport};
use crate::identity::Sandbox;
use crate::limits::{Limits, OpenGuard, Refusal};
use crate::session::leases::Lease;
use crate::state::ProxyState;
use crate::target::Target;
use crate::{forward, tunnel};

/// One client connection's ties to the sandboxes it has served: when any of them loses access (revoked,
/// expired, removed by a reload), the connection is closed.
pub struct ConnScope {
    cut: CancellationToken,
    leases: std::sync::Mutex<Vec<(String, Lease, Option<OpenGuard>)>>,
    /// For a connection that reached the transparent listener: where the sandbox was connecting to.
    pub original_dst: Option<SocketAddr>,
}

impl ConnScope {
    fn new(original_dst: Option<SocketAddr>) -> Arc<ConnScope> {
        Arc::new(ConnScope {
            cut: CancellationToken::new(),
            leases: std::sync::Mutex::new(Vec::new()),
            original_dst,
        })
    }

    /// Register this connection under `sandbox` (once per sandbox incarnation); with `count`, it is a new
    /// connection of the sandbox and must pass its connection rate and open caps.
    pub fn attach(
        &self,
        state: &ProxyState,
        limits: &Limits,
        sandbox: &Arc<Sandbox>,
        count: bool,
    ) -> Result<(), Refusal> {
        let key = sandbox.session_key();
        let mut leases = self.leases.lock().unwrap_or_else(|p| p.into_inner());
        if leases.iter().any(|(k, _, _)| *k == key) {
            return Ok(());
        }
        let guard = if count {
            limits.connection(&sandbox.id)?;
            Some(limits.open(&sandbox.id, &sandbox.user)?)
        } else {
            None
        };
        let lease = state.sessions.attach_connection(sandbox);
        let (revoked, cut) = (lease.token().clone(), self.cut.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = revoked.cancelled() => cut.cancel(),
                () = cut.cancelled() => {}
            }
        });
        leases.push((key, lease, guard));
        Ok(())
    }
}

/// Serve a connection until the client closes it, shutdown asks it to finish, the drain deadline cuts it,
/// or a sandbox it served loses access.
pub async fn serve(state: Arc<ProxyState>, stream: TcpStream, client: SocketAddr, graceful: CancellationToken) {
    serve_http(state, stream, client, graceful, None).await;
}

/// Serve plain HTTP that reached the transparent listener: origin-form requests whose host is their
/// `Host` header and whose port is the connection's original destination port.
pub async fn serve_transparent(
    state: Arc<ProxyState>,
    stream: TcpStream,
    client: SocketAddr,
    original: SocketAddr,
    graceful: CancellationToken,
) {
    serve_http(state, stream, client, graceful, Some(original)).await;
}

async fn serve_http(
    state: Arc<ProxyState>,
    stream: TcpStream,
    client: SocketAddr,
    graceful: CancellationToken,
    original: Option<SocketAddr>,
) {
    let generation = state.current();
    let (guarded, report) = FramingGuard::new(
        stream,
        generation.config.limits.max_request_header_bytes,
        error::render_framing,
    );
    let scope = ConnScope::new(original);
    let svc_state = state.clone();
    let svc_scope = scope.clone();
    let service = service_fn(move |req: Request<Incoming>| {
        let (state, scope) = (svc_state.clone(), svc_scope.clone());
        async move { Ok::<_, Infallible>(route(state, scope, client, req).await) }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        // SECURITY: slowloris — a client that trickles its request head is cut off.
        .header_read_timeout(generation.config.timeouts.request_headers);
    drop(generation);
    let conn = builder.serve_connection(TokioIo::new(guarded), service).with_upgrades();
    tokio::pin!(conn);
    let result = tokio::select! {
        r = conn.as_mut() => r,
        // SECURITY: a revoked sandbox's keep-alive connection is closed, not left to carry on.
        () = scope.cut.cancelled() => Ok(()),
        () = graceful.cancelled() => {
            conn.as_mut().graceful_shutdown();
            tokio::select! {
                r = conn.as_mut() => r,
                () = state.hard_stop.cancelled() => Ok(()),
                () = scope.cut.cancelled() => Ok(()),
            }
        }
    };
    // Ends the watcher tasks; the leases go with the scope.
    scope.cut.cancel();
    audit_malformed(&state, client, &report, &result);
    if let Err(e) = result {
        tracing::debug!(%client, "client connection ended: {e}");
    }
}

/// One record for a request that never reached the service: refused by the framing guard below hyper,
/// or unparseable to hyper itself (which then answered 400). Used for the outer connection and for the
/// HTTP/1.1 inside an interception alike.
pub fn audit_malformed(
    state: &ProxyState,
    client: SocketAddr,
    report: &FramingReport,
    result: &Result<(), hyper::Error>,
) {
    let malformed = match (report.violation(), result) {
        (Some(v), _) => Some((error::framing_status(&v), v.code(), v.to_string())),
        (None, Err(e)) if e.is_parse() => Some((error::hyper_parse_status(e), "unparseable_request", e.to_string())),
        _ => None,
    };
    if let Some((status, code, detail)) = malformed {
        let mut pending = audit::Pending::start(state.audit.clone(), client, Kind::Malformed);
        let r = pending.record();
        r.status = Some(status.as_u16());
        r.reason = Some(code.to_string());
        r.error = Some(detail);
        pending.finish();
    }
}

async fn route(
    state: Arc<ProxyState>,
    scope: Arc<ConnScope>,
    client: SocketAddr,
    req: Request<Incoming>,
) -> Response<ProxyBody> {
    if let Some(original) = scope.original_dst {
        return match transparent_request(req, original) {
            Ok(req) => forward::forward(state, scope, client, req).await,
            Err(e) => {
                let mut ex = Exchange::new(state, client, Kind::Http, &Method::GET).on_connection(scope);
                ex.record().method = None;
                ex.fail(e)
            }
        };
    }
    if req.method() == Method::CONNECT {
        tunnel::connect(state, scope, client, req).await
    } else {
        forward::forward(state, scope, client, req).await
    }
}

/// A transparent client's origin-form request as the absolute-form request an explicit client would
/// have sent: the host from `Host`, the port from the original destination.
fn transparent_request(req: Request<Incoming>, original: SocketAddr) -> Result<Request<Incoming>, ProxyError> {
    let bad = |code, message: &str| ProxyError::BadRequest {
        code,
        message: message.into(),
    };
    if req.method() == Method::CONNECT {
        return Err(bad(
            "connect_transparent",
            "CONNECT is for the explicit proxy port, not here",
        ));
    }
    let (mut parts, body) = req.into_parts();
    let mut hosts = parts.headers.get_all(HOST).iter();
    let (Some(host), None) = (hosts.next(), hosts.next()) else {
        return Err(bad("missing_host", "the request needs exactly one Host header"));
    };
    let target = Target::from_host_value(host.as_bytes(), original.port())?;
    // SECURITY: the port is the one the sandbox connected to; a Host naming another would let a request
    // allowed on one port be forwarded to another.
    if target.port != original.port() {
        return Err(bad(
            "host_port_mismatch",
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
        .map_err(|_| bad("bad_target", "the request target is not a valid path"))?;
    // SECURITY: a transparent sandbox is known by its address only; credentials it sends are not looked at.
    parts.headers.remove(PROXY_AUTHORIZATION);
    Ok(Request::from_parts(parts, body))
}
