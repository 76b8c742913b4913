//! An opened tunnel, run to its end: registered so that revocation, expiry, a spent budget or a reload that
//! takes the rule away closes it, bounded by the idle and lifetime timeouts, and then either intercepted
//! ([`super::intercept`]) or, for a `tls: tunnel` rule, its ClientHello checked and its bytes passed through.

use std::future::Future;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::intercept;
use crate::addr::ClientAddr;
use crate::error::TunnelEnd;
use crate::policy::TlsMode;
use crate::proxy::entry::socket::IntoSocket;
use crate::proxy::tunnel::lifetime::{Activity, Stop};
use crate::proxy::{Opened, TunnelRecord};
use crate::session::admission::BudgetMeter;
use crate::state::ProxyState;
use crate::target::Target;
use crate::tls::sni;

/// Run an opened tunnel on the client stream `io` yields.
pub(crate) fn launch<IO, F>(state: Arc<ProxyState>, client: ClientAddr, opened: Opened, io: F)
where
    IO: AsyncRead + AsyncWrite + IntoSocket + Unpin + Send + 'static,
    F: Future<Output = Result<IO, String>> + Send + 'static,
{
    let Opened {
        sandbox,
        target,
        upstream,
        open,
        generation,
        record,
    } = opened;
    let timeouts = (generation.config.timeouts.idle, generation.config.timeouts.tunnel_max);
    drop(generation);
    let (up, down) = record.counters();
    let mode = if upstream.is_some() {
        TlsMode::Tunnel
    } else {
        TlsMode::Intercept
    };
    let lease = state.sessions.open_tunnel(&sandbox, &target, mode);
    let meter = BudgetMeter::for_sandbox(state.limits(), state.sessions.clone(), sandbox.clone());
    let stop = Stop::new(
        lease,
        state.hard_stop.clone(),
        open,
        Activity::new(up, down),
        meter,
        timeouts,
    );
    match upstream {
        Some(upstream) => {
            state.tasks.spawn(splice(io, upstream, target, record, stop));
        }
        None => {
            let st = state.clone();
            state.tasks.spawn(async move {
                match io.await {
                    Ok(io) => intercept::intercept(st, client, sandbox, target, io, record, stop).await,
                    Err(e) => record.end(Some(&TunnelEnd::Handover(e))),
                }
            });
        }
    }
}

/// Check the ClientHello, then move bytes until either side closes (by splice(2) where the client stream
/// is a TCP socket underneath, else by copying); one audit record at the end.
async fn splice<IO, F>(io: F, mut upstream: TcpStream, target: Target, record: TunnelRecord, stop: Stop)
where
    IO: AsyncRead + AsyncWrite + IntoSocket + Unpin + Send + 'static,
    F: Future<Output = Result<IO, String>> + Send + 'static,
{
    let io = match io.await {
        Ok(io) => io,
        Err(e) => return record.end(Some(&TunnelEnd::Handover(e))),
    };
    let mut client = stop.watch(io);
    let hello = tokio::select! {
        h = sni::read_client_hello(&mut client) => h.map_err(|e| TunnelEnd::NotTls(e.to_string())),
        end = stop.ended() => Err(end),
    };
    let first = match hello {
        // SECURITY: domain fronting through a pinned-certificate tunnel: the TLS server name must be the
        // CONNECT host (a ClientHello without SNI is let through: the destination is fixed by the CONNECT).
        Ok((_, Some(sni))) if Some(sni.as_str()) != target.host.as_name() => {
            return record.end(Some(&TunnelEnd::SniMismatch(sni)));
        }
        Ok((bytes, _)) => bytes,
        Err(end) => return record.end(Some(&end)),
    };
    if let Err(e) = upstream.write_all(&first).await {
        return record.end(Some(&TunnelEnd::UpstreamClosed(e.to_string())));
    }
    let moved = match client.into_inner().into_socket() {
        Ok(mut socket) => {
            // Bytes the client sent after its ClientHello and that were read before the socket was handed
            // over go first; then the kernel moves the rest, counted as it goes.
            let relayed = async {
                if !socket.pending.is_empty() {
                    stop.count(socket.pending.len() as u64, 0)?;
                    upstream.write_all(&socket.pending).await?;
                }
                crate::proxy::tunnel::splice::relay(socket.tcp(), &mut upstream, &stop).await
            };
            tokio::select! {
                relayed = relayed => Ok(relayed),
                end = stop.ended() => Err(end),
            }
        }
        Err(stream) => {
            // The watched client stream counts the bytes (into the audit record) as they move.
            let mut client = stop.watch(stream);
            tokio::select! {
                copied = tokio::io::copy_bidirectional(&mut client, &mut upstream) => Ok(copied.map(drop)),
                end = stop.ended() => Err(end),
            }
        }
    };
    let end = match moved {
        Ok(_) if stop.over_budget() => Some(TunnelEnd::ByteBudget),
        Ok(relayed) => relayed.err().map(|e| TunnelEnd::Failed(e.to_string())),
        Err(end) => Some(end),
    };
    record.end(end.as_ref());
}
