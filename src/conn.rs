//! One client connection: hyper's HTTP/1.1 server behind the byte-level framing guard.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use http::{Method, Request, Response};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use crate::audit::{self, Kind};
use crate::body::ProxyBody;
use crate::error;
use crate::framing::{FramingGuard, FramingReport};
use crate::state::ProxyState;
use crate::{forward, tunnel};

/// Serve a connection until the client closes it, shutdown asks it to finish, or the drain deadline cuts it.
pub async fn serve(state: Arc<ProxyState>, stream: TcpStream, client: SocketAddr, graceful: CancellationToken) {
    let (guarded, report) = FramingGuard::new(
        stream,
        state.config.limits.max_request_header_bytes,
        error::render_framing,
    );
    let svc_state = state.clone();
    let service = service_fn(move |req: Request<Incoming>| {
        let state = svc_state.clone();
        async move { Ok::<_, Infallible>(route(state, client, req).await) }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        // SECURITY: slowloris — a client that trickles its request head is cut off.
        .header_read_timeout(state.config.timeouts.request_headers);
    let conn = builder.serve_connection(TokioIo::new(guarded), service).with_upgrades();
    tokio::pin!(conn);
    let result = tokio::select! {
        r = conn.as_mut() => r,
        () = graceful.cancelled() => {
            conn.as_mut().graceful_shutdown();
            tokio::select! {
                r = conn.as_mut() => r,
                () = state.hard_stop.cancelled() => Ok(()),
            }
        }
    };
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

async fn route(state: Arc<ProxyState>, client: SocketAddr, req: Request<Incoming>) -> Response<ProxyBody> {
    if req.method() == Method::CONNECT {
        tunnel::connect(state, client, req).await
    } else {
        forward::forward(state, client, req).await
    }
}
