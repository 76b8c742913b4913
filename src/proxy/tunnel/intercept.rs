//! TLS interception: terminate the sandbox's TLS with a leaf from its own CA, serve the HTTP inside (h2 or
//! HTTP/1.1, by ALPN), and hand every request inside to the pipeline, which polices, sends and audits it
//! as it does a plain request.

use std::convert::Infallible;
use std::sync::Arc;

use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::LazyConfigAcceptor;
use tokio_rustls::server::TlsStream;

use super::websocket;
use crate::addr::ClientAddr;
use crate::audit::Kind;
use crate::body::{self, ProxyBody};
use crate::error::{self, TunnelEnd};
use crate::framing::FramingGuard;
use crate::generation::Generation;
use crate::identity::Sandbox;
use crate::proxy::tunnel::lifetime::{Stop, Watched};
use crate::proxy::{self, Claim, Input, Inside, Intent, Outcome, TunnelRecord};
use crate::state::ProxyState;
use crate::target::{Host, Target};
use crate::tls::ca::CaError;
use crate::tls::leaf::LeafName;

/// What every request inside one interception shares.
struct Interception {
    state: Arc<ProxyState>,
    client: ClientAddr,
    sandbox: Arc<Sandbox>,
    target: Target,
    stop: Stop,
    inside: Arc<Inside>,
}

/// Terminate TLS on the client stream of an opened tunnel and serve what is inside. `record` is the
/// tunnel's own, written when the connection ends (with the reason if TLS never started).
pub(crate) async fn intercept<IO: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    state: Arc<ProxyState>,
    client: ClientAddr,
    sandbox: Arc<Sandbox>,
    target: Target,
    io: IO,
    record: TunnelRecord,
    stop: Stop,
) {
    let generation = state.current();
    let handshake_limit = generation.config.timeouts.tls_handshake;
    let client_io = stop.watch(io);
    let tls = tokio::select! {
        r = tokio::time::timeout(handshake_limit, handshake(&state, &generation, &sandbox, &target, client_io)) => {
            r.unwrap_or_else(|_| Err(TunnelEnd::HandshakeTimeout(format!(
                "the client did not complete its TLS handshake within {handshake_limit:?} (timeouts.tls_handshake)"
            ))))
        }
        end = stop.ended() => Err(end),
    };
    let tls = match tls {
        Ok(tls) => tls,
        Err(end) => return record.end(Some(&end)),
    };
    let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
    let max_head = generation.config.limits.max_request_header_bytes;
    let request_headers = generation.config.timeouts.request_headers;
    drop(generation);
    let interception = Arc::new(Interception {
        state: state.clone(),
        client,
        sandbox,
        inside: Arc::new(Inside::new(&target)),
        target,
        stop,
    });
    let watch = interception.clone();
    let service = service_fn(move |req: Request<Incoming>| {
        let interception = interception.clone();
        async move { Ok::<_, Infallible>(inner(interception, req).await) }
    });
    let mut end = None;
    if h2 {
        let conn = h2_server(max_head).serve_connection(TokioIo::new(tls), service);
        let result = tokio::select! {
            r = conn => r,
            why = watch.stop.ended() => {
                end = Some(why);
                Ok(())
            }
        };
        if let Err(e) = result {
            tracing::debug!(%client, "intercepted h2 connection ended: {e}");
        }
    } else {
        // The same byte-level framing guard as on the outer connection: smuggling inside TLS is still smuggling.
        let (guarded, report) = FramingGuard::new(tls, max_head, error::render_framing);
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(request_headers)
            .serve_connection(TokioIo::new(guarded), service)
            .with_upgrades();
        let result = tokio::select! {
            r = conn => r,
            why = watch.stop.ended() => {
                end = Some(why);
                Ok(())
            }
        };
        proxy::malformed(&state, client, &report, &result);
        if let Err(e) = result {
            tracing::debug!(%client, "intercepted connection ended: {e}");
        }
    }
    if watch.stop.over_budget() {
        end = Some(TunnelEnd::ByteBudget);
    }
    record.end(end.as_ref());
}

/// Streams one intercepted h2 connection may have open at once (RFC 9113 §6.5.2 recommends no fewer than 100);
/// more are refused (`REFUSED_STREAM`).
const H2_MAX_STREAMS: u32 = 100;

/// The h2 server of an interception, its limits pinned rather than left to hyper's defaults (which hyper says
/// may change), each tried by `.ci/suites/h2_abuse.py`.
fn h2_server(max_head: usize) -> hyper::server::conn::http2::Builder<TokioExecutor> {
    let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    builder
        .timer(TokioTimer::new())
        .max_concurrent_streams(H2_MAX_STREAMS)
        // SECURITY: the same limit on a request's head as HTTP/1.1 has (limits.max_request_header_bytes), on
        // the decoded header list, so an HPACK bomb (a dynamic-table entry referenced thousands of times) is
        // refused before it is built.
        .max_header_list_size(u32::try_from(max_head).unwrap_or(u32::MAX))
        // SECURITY: rapid reset (CVE-2023-44487): streams the client opens and resets before cordon has taken
        // them; more end the connection (GOAWAY ENHANCE_YOUR_CALM).
        .max_pending_accept_reset_streams(20)
        // SECURITY: streams cordon itself resets for the client's errors (a malformed request each), likewise
        // bounded: more end the connection.
        .max_local_error_reset_streams(1024)
        // SECURITY: what is buffered for a stream the client does not read (a window of 0): at most this per
        // stream, so one connection holds at most H2_MAX_STREAMS times it.
        .max_send_buf_size(256 * 1024)
        // A client that stops reading (it answers no PING) is closed rather than held forever with what its
        // streams buffer (not tried by the suites: it takes 50 s).
        .keep_alive_interval(std::time::Duration::from_secs(30))
        .keep_alive_timeout(std::time::Duration::from_secs(20));
    builder
}

/// The client's TLS handshake, with a leaf for the CONNECT host from the sandbox's CA.
async fn handshake<IO: AsyncRead + AsyncWrite + Unpin>(
    state: &ProxyState,
    generation: &Generation,
    sandbox: &Sandbox,
    target: &Target,
    client_io: Watched<IO>,
) -> Result<TlsStream<Watched<IO>>, TunnelEnd> {
    let start = LazyConfigAcceptor::new(rustls::server::Acceptor::default(), client_io)
        .await
        // SECURITY: anything but TLS after a CONNECT to an intercepted rule (a plain-text protocol
        // smuggled through the tunnel) is closed, never relayed.
        .map_err(|e| TunnelEnd::NotTls(format!("the client did not start TLS: {e}")))?;
    let sni = start.client_hello().server_name().map(|s| s.to_ascii_lowercase());
    // SECURITY: domain fronting: the name the client asks TLS for must be the host it CONNECTed to.
    if let Some(sni) = sni
        && Some(sni.as_str()) != target.host.as_name()
    {
        return Err(TunnelEnd::SniMismatch(sni));
    }
    let name = match &target.host {
        Host::Name(n) => LeafName::Dns(n.clone()),
        other => LeafName::Ip(other.ip().unwrap_or(std::net::Ipv4Addr::UNSPECIFIED.into())),
    };
    let config = state
        .ca(generation, sandbox)
        .map_err(|e| e.to_string())
        .and_then(|ca| {
            let (config, hit) = state.leaves.lookup(&ca, &name).map_err(|e| match e {
                CaError::OutOfScope { .. } => format!(
                    "{e}; if the policy now allows it, run `{}` and have the sandbox trust the new CA",
                    state.cas.store.rotate_command(&sandbox.id)
                ),
                e => e.to_string(),
            })?;
            state.metrics.cert_cache(hit);
            Ok(config)
        })
        .map_err(|e| {
            tracing::warn!(sandbox = %sandbox.id, "no certificate for {target}: {e}");
            TunnelEnd::LeafUnavailable(e)
        })?;
    start
        .into_stream(config)
        .await
        .map_err(|e| TunnelEnd::HandshakeFailed(format!("TLS handshake with the client failed: {e}")))
}

/// One request inside the interception.
async fn inner(interception: Arc<Interception>, mut req: Request<Incoming>) -> Response<ProxyBody> {
    // A WebSocket handshake: after a 101 the client's upgraded stream is spliced to the upstream's.
    let client_upgrade = proxy::is_websocket(&req).then(|| hyper::upgrade::on(&mut req));
    let input = Input {
        kind: Kind::Https,
        client: interception.client,
        original_dst: None,
        conn: None,
        claim: Claim::Established(interception.sandbox.clone()),
        target: Ok(interception.target.clone()),
        intent: Intent::Request {
            req: req.map(body::boxed),
            inside: Some(interception.inside.clone()),
        },
    };
    let (mut resp, guard) = match proxy::run(&interception.state, input).await {
        Outcome::Upgrade(resp, guard) => (resp, Some(guard)),
        other => (other.into_response(), None),
    };
    if let (StatusCode::SWITCHING_PROTOCOLS, Some(client_upgrade), Some(guard)) = (resp.status(), client_upgrade, guard)
    {
        let upstream_upgrade = hyper::upgrade::on(&mut resp);
        let relayed = interception.clone();
        interception.state.tasks.spawn(async move {
            let (Ok(c), Ok(u)) = (client_upgrade.await, upstream_upgrade.await) else {
                tracing::debug!("the WebSocket could not be relayed: an upgrade failed");
                return;
            };
            websocket::relay(c, u, *guard, &relayed.stop).await;
        });
    }
    resp
}
