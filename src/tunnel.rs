//! CONNECT: decide, dial, answer 200 only then, and move bytes both ways.
//!
//! `open` is where TLS interception slots in: once the decision is made and the upstream is dialled,
//! the upgraded client stream is either spliced to the upstream (here) or handed to the interceptor.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use http::{Method, Request, Response};
use hyper::body::Incoming;
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use crate::audit::{self, Kind};
use crate::body::ProxyBody;
use crate::error::{self, ProxyError};
use crate::exchange::Exchange;
use crate::state::ProxyState;
use crate::target::Target;

/// Handle one CONNECT request.
pub async fn connect(state: Arc<ProxyState>, client: SocketAddr, mut req: Request<Incoming>) -> Response<ProxyBody> {
    let mut ex = Exchange::new(state.clone(), client, Kind::Connect, &Method::CONNECT);
    match open(&mut ex, &req).await {
        Ok(upstream) => {
            ex.record().status = Some(200);
            let on_upgrade = hyper::upgrade::on(&mut req);
            let audit = ex.into_audit();
            let stop = state.hard_stop.clone();
            state.tasks.spawn(splice(on_upgrade, upstream, audit, stop));
            error::connect_established()
        }
        Err(e) => ex.fail(e),
    }
}

/// Every check a tunnel needs before the client hears 200: nothing is answered until the upstream is dialled.
async fn open(ex: &mut Exchange, req: &Request<Incoming>) -> Result<TcpStream, ProxyError> {
    let target = Target::from_connect_uri(req.uri());
    if let Ok(t) = &target {
        ex.set_target(t);
    }
    let sandbox = ex.identify(req.headers())?;
    let target = target?;
    ex.decide(&sandbox, &target, None)?;
    ex.dial(&target).await
}

/// Move bytes until either side closes; the audit record is emitted at the end with the byte counts.
async fn splice(on_upgrade: OnUpgrade, mut upstream: TcpStream, mut audit: audit::Pending, stop: CancellationToken) {
    let upgraded = match on_upgrade.await {
        Ok(u) => u,
        Err(e) => {
            audit.record().error = Some(format!("the client connection was not handed over: {e}"));
            audit.finish();
            return;
        }
    };
    let mut client = TokioIo::new(upgraded);
    tokio::select! {
        copied = tokio::io::copy_bidirectional(&mut client, &mut upstream) => match copied {
            Ok((up, down)) => {
                audit.up_counter().fetch_add(up, Ordering::Relaxed);
                audit.down_counter().fetch_add(down, Ordering::Relaxed);
            }
            Err(e) => audit.record().error = Some(format!("tunnel ended with an error: {e}")),
        },
        () = stop.cancelled() => {
            audit.record().error = Some("cut at shutdown after the drain deadline".into());
        }
    }
    audit.finish();
}
