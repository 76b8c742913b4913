//! CONNECT: decide, check the destination, answer 200 only then; then intercept (the default) or, for a
//! `tls: tunnel` rule, check the ClientHello's SNI and move bytes both ways.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use http::{Method, Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::audit::{self, Kind};
use crate::body::ProxyBody;
use crate::conn::ConnScope;
use crate::error::{self, ProxyError};
use crate::exchange::Exchange;
use crate::identity::Sandbox;
use crate::limits::OpenGuard;
use crate::mitm;
use crate::policy::TlsMode;
use crate::session::admission::BudgetMeter;
use crate::session::lifetime::{Activity, Stop};
use crate::state::ProxyState;
use crate::target::Target;
use crate::tls::sni;

/// What a CONNECT (or a transparently redirected TLS connection) turned into.
pub enum Opened {
    /// Terminate TLS with the sandbox's CA.
    Intercept(Arc<Sandbox>, Target, OpenGuard),
    /// Pass bytes through to this dialled upstream.
    Tunnel(Arc<Sandbox>, TcpStream, Target, OpenGuard),
}

/// Handle one CONNECT request.
pub async fn connect(
    state: Arc<ProxyState>,
    scope: Arc<ConnScope>,
    client: SocketAddr,
    mut req: Request<Incoming>,
) -> Response<ProxyBody> {
    let mut ex = Exchange::new(state.clone(), client, Kind::Connect, &Method::CONNECT).on_connection(scope);
    match open(&mut ex, &req).await {
        Ok(opened) => {
            ex.record().status = Some(200);
            let on_upgrade = hyper::upgrade::on(&mut req);
            let io = async move {
                on_upgrade
                    .await
                    .map(TokioIo::new)
                    .map_err(|e| format!("the client connection was not handed over: {e}"))
            };
            launch(state, client, ex, opened, io);
            error::connect_established()
        }
        Err(e) => ex.fail(e),
    }
}

/// Every check before the client hears 200: identity, then `open_for`.
async fn open(ex: &mut Exchange, req: &Request<Incoming>) -> Result<Opened, ProxyError> {
    let target = Target::from_connect_uri(req.uri());
    if let Ok(t) = &target {
        ex.set_target(t);
    }
    let sandbox = ex.identify(req.headers())?;
    let target = target?;
    open_for(ex, sandbox, target).await
}

/// The checks of a TLS destination once the sandbox is known: rates, the decision, the connection caps,
/// and the address guard (dialling now for a `tls: tunnel` rule).
pub async fn open_for(ex: &mut Exchange, sandbox: Arc<Sandbox>, target: Target) -> Result<Opened, ProxyError> {
    ex.admit(&sandbox, &target)?;
    let rule = ex.decide(&sandbox, &target, None)?;
    let mode = rule
        .and_then(|i| ex.generation.policy(&sandbox.policy).and_then(|p| p.rules.get(i)))
        .map(|r| r.tls)
        .unwrap_or_default();
    // A tunnel is a connection of the sandbox: its rate and the open caps apply before the 200.
    let limits = ex.state.limits();
    let open = limits
        .connection(&sandbox.id)
        .and_then(|()| limits.open(&sandbox.id, &sandbox.user))
        .map_err(ProxyError::Limited)?;
    match mode {
        TlsMode::Tunnel => {
            let upstream = ex.dial(&target).await?;
            Ok(Opened::Tunnel(sandbox, upstream, target, open))
        }
        TlsMode::Intercept => {
            // Refuse now rather than after the TLS handshake; the pool checks again when it dials.
            ex.generation.dialer.resolve(&target).await?;
            Ok(Opened::Intercept(sandbox, target, open))
        }
    }
}

/// Run an opened tunnel on the client stream `io` yields: registered so that revocation, expiry, a spent
/// budget or a reload that takes the rule away closes it, and bounded by the idle and lifetime timeouts.
pub fn launch<IO, F>(state: Arc<ProxyState>, client: SocketAddr, ex: Exchange, opened: Opened, io: F)
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    F: Future<Output = Result<IO, String>> + Send + 'static,
{
    let timeouts = (
        ex.generation.config.timeouts.idle,
        ex.generation.config.timeouts.tunnel_max,
    );
    let audit = ex.into_audit();
    let activity = Activity::new(audit.up_counter(), audit.down_counter());
    let stop = |sandbox: &Arc<Sandbox>, target: &Target, mode, open| {
        let lease = state.sessions.open_tunnel(sandbox, target, mode);
        let meter = BudgetMeter::for_sandbox(state.limits(), state.sessions.clone(), sandbox.clone());
        Stop::new(lease, state.hard_stop.clone(), open, activity, meter, timeouts)
    };
    match opened {
        Opened::Tunnel(sandbox, upstream, target, open) => {
            let stop = stop(&sandbox, &target, "tunnel", open);
            state.tasks.spawn(splice(io, upstream, target, audit, stop));
        }
        Opened::Intercept(sandbox, target, open) => {
            let stop = stop(&sandbox, &target, "intercept", open);
            let st = state.clone();
            state.tasks.spawn(async move {
                match io.await {
                    Ok(io) => mitm::intercept(st, client, sandbox, target, io, audit, stop).await,
                    Err(e) => handover_failed(audit, e),
                }
            });
        }
    }
}

fn handover_failed(mut audit: audit::Pending, e: String) {
    audit.record().error = Some(e);
    audit.finish();
}

/// Check the ClientHello, then move bytes until either side closes; one audit record at the end.
async fn splice<IO, F>(io: F, mut upstream: TcpStream, target: Target, mut audit: audit::Pending, stop: Stop)
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    F: Future<Output = Result<IO, String>> + Send + 'static,
{
    let io = match io.await {
        Ok(io) => io,
        Err(e) => return handover_failed(audit, e),
    };
    let mut client = stop.watch(io);
    let hello = tokio::select! {
        h = sni::read_client_hello(&mut client) => h,
        (_, why) = stop.ended() => Err(sni::HelloError::Io(std::io::Error::other(why))),
    };
    let first = match hello {
        // SECURITY: domain fronting through a pinned-certificate tunnel: the TLS server name must be the
        // CONNECT host (a ClientHello without SNI is let through: the destination is fixed by the CONNECT).
        Ok((_, Some(sni))) if Some(sni.as_str()) != target.host.as_name() => {
            audit.record().reason = Some("sni_mismatch".into());
            audit.record().error = Some(format!("the TLS server name {sni:?} is not the CONNECT host"));
            return audit.finish();
        }
        Ok((bytes, _)) => bytes,
        Err(e) => {
            audit.record().reason = Some("not_tls".into());
            audit.record().error = Some(e.to_string());
            return audit.finish();
        }
    };
    if let Err(e) = upstream.write_all(&first).await {
        audit.record().error = Some(format!("the upstream closed: {e}"));
        return audit.finish();
    }
    // The watched client stream counts the bytes (into the audit record) as they move.
    tokio::select! {
        copied = tokio::io::copy_bidirectional(&mut client, &mut upstream) => {
            if stop.over_budget() {
                audit.record().reason = Some("byte_budget".into());
                audit.record().error = Some("the sandbox's byte budget is spent (limits.per_sandbox)".into());
            } else if let Err(e) = copied {
                audit.record().error = Some(format!("tunnel ended with an error: {e}"));
            }
        }
        (reason, why) = stop.ended() => {
            audit.record().reason = Some(reason.into());
            audit.record().error = Some(why);
        }
    }
    audit.finish();
}
