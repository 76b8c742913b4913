//! TLS interception: terminate the sandbox's TLS with a leaf from its own CA, then serve the HTTP inside
//! (h2 or HTTP/1.1, by ALPN) and send every inner request through the same policy, header hygiene, pool
//! and audit as a plain request.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use http::header::{CONNECTION, HOST, UPGRADE};
use http::uri::Scheme;
use http::{HeaderValue, Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::LazyConfigAcceptor;
use tokio_rustls::server::TlsStream;

use crate::audit::{self, Kind};
use crate::body::ProxyBody;
use crate::error::{self, ProxyError};
use crate::exchange::Exchange;
use crate::forward;
use crate::framing::FramingGuard;
use crate::identity::Sandbox;
use crate::session::lifetime::{Stop, Watched};
use crate::state::{Generation, ProxyState};
use crate::target::{Host, Spellings, Target, check_path};
use crate::tls::leaf::LeafName;
use crate::upstream::pool::SandboxClients;

/// What every request inside one intercepted CONNECT shares.
struct Tunnel {
    state: Arc<ProxyState>,
    client: SocketAddr,
    sandbox: Arc<Sandbox>,
    target: Target,
    stop: Stop,
    /// The sandbox's upstream clients, looked up once per configuration generation instead of per request.
    pools: Mutex<Option<(Weak<Generation>, Arc<SandboxClients>)>>,
    /// How clients usually spell `target`, recognised without parsing.
    spellings: Spellings,
}

impl Tunnel {
    fn pools(&self, generation: &Arc<Generation>) -> Arc<SandboxClients> {
        let mut cached = self.pools.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((seen, pools)) = cached.as_ref()
            && std::ptr::eq(seen.as_ptr(), Arc::as_ptr(generation))
        {
            return pools.clone();
        }
        let pools = generation.upstreams.for_sandbox(&self.sandbox.id);
        // A Weak keeps the old generation's allocation (not the generation) alive, so its address is never
        // reused while it is compared against.
        *cached = Some((Arc::downgrade(generation), pools.clone()));
        pools
    }
}

/// Terminate TLS on the upgraded CONNECT stream and serve what is inside. `audit` is the CONNECT's own
/// record, emitted when the connection ends (with the reason if TLS never started).
pub async fn intercept<IO: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    state: Arc<ProxyState>,
    client: SocketAddr,
    sandbox: Arc<Sandbox>,
    target: Target,
    io: IO,
    mut audit: audit::Pending,
    stop: Stop,
) {
    let generation = state.current();
    let handshake_limit = generation.config.timeouts.tls_handshake;
    let client_io = stop.watch(io);
    let tls = tokio::select! {
        r = tokio::time::timeout(handshake_limit, handshake(&state, &generation, &sandbox, &target, client_io)) => {
            r.unwrap_or_else(|_| Err((
                "tls_handshake_timeout",
                format!("the client did not complete its TLS handshake within {handshake_limit:?} (timeouts.tls_handshake)"),
            )))
        }
        (reason, why) = stop.ended() => Err((reason, why)),
    };
    let tls = match tls {
        Ok(tls) => tls,
        Err((reason, detail)) => {
            refuse(&mut audit, reason, detail);
            audit.finish();
            return;
        }
    };
    let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
    let limits = generation.config.limits.clone();
    let request_headers = generation.config.timeouts.request_headers;
    drop(generation);
    let tunnel = Arc::new(Tunnel {
        state: state.clone(),
        client,
        sandbox,
        spellings: Spellings::of(&target, 443),
        target,
        stop,
        pools: Mutex::new(None),
    });
    let stop = tunnel.clone();
    let service = service_fn(move |req: Request<Incoming>| {
        let tunnel = tunnel.clone();
        async move { Ok::<_, Infallible>(inner(tunnel, req).await) }
    });
    if h2 {
        let conn = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .serve_connection(TokioIo::new(tls), service);
        let result = tokio::select! {
            r = conn => r,
            (reason, why) = stop.stop.ended() => {
                refuse(&mut audit, reason, why);
                Ok(())
            }
        };
        if let Err(e) = result {
            tracing::debug!(%client, "intercepted h2 connection ended: {e}");
        }
    } else {
        // The same byte-level framing guard as on the outer connection: smuggling inside TLS is still smuggling.
        let (guarded, report) = FramingGuard::new(tls, limits.max_request_header_bytes, error::render_framing);
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(request_headers)
            .serve_connection(TokioIo::new(guarded), service)
            .with_upgrades();
        let result = tokio::select! {
            r = conn => r,
            (reason, why) = stop.stop.ended() => {
                refuse(&mut audit, reason, why);
                Ok(())
            }
        };
        crate::conn::audit_malformed(&state, client, &report, &result);
        if let Err(e) = result {
            tracing::debug!(%client, "intercepted connection ended: {e}");
        }
    }
    if stop.stop.over_budget() {
        refuse(
            &mut audit,
            "byte_budget",
            "the sandbox's byte budget is spent (limits.per_sandbox)".into(),
        );
    }
    audit.finish();
}

/// The client's TLS handshake, with a leaf for the CONNECT host from the sandbox's CA.
async fn handshake<IO: AsyncRead + AsyncWrite + Unpin>(
    state: &ProxyState,
    generation: &Generation,
    sandbox: &Sandbox,
    target: &Target,
    client_io: Watched<IO>,
) -> Result<TlsStream<Watched<IO>>, (&'static str, String)> {
    let start = LazyConfigAcceptor::new(rustls::server::Acceptor::default(), client_io)
        .await
        // SECURITY: anything but TLS after a CONNECT to an intercepted rule (a plain-text protocol
        // smuggled through the tunnel) is closed, never relayed.
        .map_err(|e| ("not_tls", format!("the client did not start TLS: {e}")))?;
    let sni = start.client_hello().server_name().map(|s| s.to_ascii_lowercase());
    // SECURITY: domain fronting — the name the client asks TLS for must be the host it CONNECTed to.
    if let Some(sni) = &sni
        && Some(sni.as_str()) != target.host.as_name()
    {
        return Err((
            "sni_mismatch",
            format!("the TLS server name {sni:?} is not the CONNECT host"),
        ));
    }
    let name = match &target.host {
        Host::Name(n) => LeafName::Dns(n.clone()),
        other => LeafName::Ip(other.ip().unwrap_or(std::net::Ipv4Addr::UNSPECIFIED.into())),
    };
    let config = state
        .ca(generation, sandbox)
        .map_err(|e| e.to_string())
        .and_then(|ca| {
            let (config, hit) = state.leaves.lookup(&ca, &name).map_err(|e| e.to_string())?;
            state.metrics.cert_cache(hit);
            Ok(config)
        })
        .map_err(|e| {
            tracing::warn!(sandbox = %sandbox.id, "no certificate for {target}: {e}");
            ("leaf_unavailable", e)
        })?;
    start.into_stream(config).await.map_err(|e| {
        (
            "tls_handshake_failed",
            format!("TLS handshake with the client failed: {e}"),
        )
    })
}

fn refuse(audit: &mut audit::Pending, reason: &str, detail: String) {
    let r = audit.record();
    r.reason = Some(reason.to_string());
    r.error = Some(detail);
}

/// One request inside the interception.
async fn inner(tunnel: Arc<Tunnel>, mut req: Request<Incoming>) -> Response<ProxyBody> {
    let mut ex = Exchange::new(tunnel.state.clone(), tunnel.client, Kind::Https, req.method());
    ex.set_identity(&tunnel.sandbox);
    // SECURITY: the identity was established at CONNECT; each request inside checks it still holds
    // (revoked, expired or removed by a reload), without waiting for the tunnel to be closed.
    if let Err(why) = tunnel.state.entitled(&ex.generation, &tunnel.sandbox) {
        return ex.fail(ProxyError::Auth(why.into()));
    }
    ex.set_target(&tunnel.target);
    ex.record().path = Some(req.uri().path().to_string());
    let websocket = is_websocket(&req);
    let client_upgrade = websocket.then(|| hyper::upgrade::on(&mut req));
    let (mut outgoing, rule) = match police(&mut ex, &tunnel, req, websocket) {
        Ok(r) => r,
        Err(e) => return ex.fail(e),
    };
    if let Err(e) = ex.approve(&tunnel.sandbox, &tunnel.target, rule, &mut outgoing).await {
        return ex.fail(e);
    }
    if let Err(e) = ex
        .credentials(&tunnel.sandbox, &tunnel.target, true, &mut outgoing)
        .await
    {
        return ex.fail(e);
    }
    let clients = tunnel.pools(&ex.generation);
    let pool = if websocket { &clients.http1 } else { &clients.any };
    let Some(client_upgrade) = client_upgrade else {
        return forward::relay(ex, pool, outgoing).await;
    };
    // WebSocket: HTTP/1.1 end to end; after a 101 both upgraded streams are spliced.
    let mut resp = match forward::send(&ex, pool, outgoing).await {
        Ok(r) => r,
        Err(e) => return ex.fail(e),
    };
    if resp.status() != StatusCode::SWITCHING_PROTOCOLS {
        return forward::respond(ex, resp.map(crate::body::boxed));
    }
    let upstream_upgrade = hyper::upgrade::on(&mut resp);
    let mut out = forward::respond(ex, resp.map(crate::body::boxed));
    out.headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("upgrade"));
    out.headers_mut().insert(UPGRADE, HeaderValue::from_static("websocket"));
    let splice_tunnel = tunnel.clone();
    tunnel.state.tasks.spawn(async move {
        if let (Ok(c), Ok(u)) = (client_upgrade.await, upstream_upgrade.await) {
            let (mut c, mut u) = (TokioIo::new(c), TokioIo::new(u));
            tokio::select! {
                _ = tokio::io::copy_bidirectional(&mut c, &mut u) => {}
                _ = splice_tunnel.stop.ended() => {}
            }
        }
    });
    out
}

fn is_websocket(req: &Request<Incoming>) -> bool {
    req.version() == http::Version::HTTP_11
        && req
            .headers()
            .get(UPGRADE)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"websocket"))
}

/// The checks of an inner request, and the request as it goes upstream.
fn police(
    ex: &mut Exchange,
    tunnel: &Tunnel,
    req: Request<Incoming>,
    websocket: bool,
) -> Result<(Request<ProxyBody>, Option<usize>), ProxyError> {
    // SECURITY: a CONNECT inside an intercepted tunnel would open a second, unpoliced tunnel.
    if req.method() == Method::CONNECT {
        return Err(ProxyError::BadRequest {
            code: "connect_in_tunnel",
            message: "CONNECT inside an intercepted connection is not allowed".into(),
        });
    }
    // SECURITY: host confusion — every inner request must be for the host and port of its CONNECT, by
    // :authority / absolute-form authority and by Host alike.
    let hosts = req.headers().get_all(HOST).iter().count();
    if hosts > 1 {
        return Err(ProxyError::BadRequest {
            code: "duplicate_host",
            message: "more than one Host header".into(),
        });
    }
    let claimed = req
        .uri()
        .authority()
        .map(|a| a.as_str().as_bytes())
        .into_iter()
        .chain(req.headers().get(HOST).map(|h| h.as_bytes()));
    let mut named = false;
    for value in claimed {
        named = true;
        if !tunnel.spellings.named_by(value) {
            return Err(ProxyError::Misdirected(tunnel.target.clone()));
        }
    }
    if !named {
        return Err(ProxyError::BadRequest {
            code: "missing_host",
            message: "the request names no host".into(),
        });
    }
    check_path(req.uri().path())?;
    ex.admit(&tunnel.sandbox, &tunnel.target)?;
    let rule = ex.decide(&tunnel.sandbox, &tunnel.target, Some((req.method(), req.uri().path())))?;
    let mut out = forward::outgoing(ex, req, Scheme::HTTPS, &tunnel.target, 443)?;
    if websocket {
        out.headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("upgrade"));
        out.headers_mut().insert(UPGRADE, HeaderValue::from_static("websocket"));
    }
    Ok((out, rule))
}
