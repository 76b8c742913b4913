//! The preview listener's connections: TLS (when `previews.tls` is set) and HTTP/1.1 with upgrades; each
//! request is handed to the data plane (`proxy::run`) as a visit, whose phases check, audit and forward it.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use http::Response;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use crate::addr::ClientAddr;
use crate::audit::Kind;
use crate::body::ProxyBody;
use crate::error::ProxyError;
use crate::proxy::{Claim, Input, Intent};
use crate::state::ProxyState;

/// How long a client may take over its TLS handshake.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// Serve one connection of the preview listener until it closes or cordon stops.
pub(crate) async fn serve(state: Arc<ProxyState>, stream: TcpStream, client: ClientAddr, graceful: CancellationToken) {
    let Some(previews) = state.previews.clone() else { return };
    match &previews.tls {
        Some(acceptor) => match tokio::time::timeout(HANDSHAKE, acceptor.accept(stream)).await {
            Ok(Ok(tls)) => http(state, TokioIo::new(tls), client, graceful).await,
            Ok(Err(e)) => tracing::debug!(client = %client.0, "preview TLS handshake failed: {e}"),
            Err(_) => tracing::debug!(client = %client.0, "preview TLS handshake timed out"),
        },
        None => http(state, TokioIo::new(stream), client, graceful).await,
    }
}

async fn http<I>(state: Arc<ProxyState>, io: I, client: ClientAddr, graceful: CancellationToken)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let timeouts = state.current().config.timeouts.clone();
    let svc_state = state.clone();
    let svc = service_fn(move |req| {
        let state = svc_state.clone();
        async move { Ok::<_, Infallible>(visit(&state, client, req).await) }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(timeouts.request_headers);
    let conn = builder.serve_connection(io, svc).with_upgrades();
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        () = graceful.cancelled() => {
            conn.as_mut().graceful_shutdown();
            tokio::select! {
                _ = conn.as_mut() => {}
                () = state.hard_stop.cancelled() => {}
            }
        }
    }
}

/// One request of a person, through the data plane's preview phases; the response (the dev server's, the
/// session's, or a refusal's page).
async fn visit(state: &Arc<ProxyState>, client: ClientAddr, req: hyper::Request<Incoming>) -> Response<ProxyBody> {
    let input = Input {
        kind: Kind::Preview,
        client,
        original_dst: None,
        conn: None,
        claim: Claim::Visitor,
        // A preview's destination is its name, which the visitor phase reads: no proxy target to parse.
        target: Err(ProxyError::Internal),
        intent: Intent::Visit {
            req: req.map(crate::body::boxed),
        },
    };
    crate::proxy::run(state, input).await.into_response()
}
