//! The admin side's listeners: `listen.admin` (probes, metrics, `/v1`, and the console under `/console/` when it
//! has no listener of its own) and `listen.console`; each plain or TLS, an admin listener optionally asking for
//! client certificates. What a connection may reach depends on its listener ([`Surface`]) and, for `/v1` with
//! `admin.tls.client_ca`, on whether it presented a verified certificate.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::Request;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use secrecy::ExposeSecret;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::router::{Admin, handle};
use super::surface::{Conn, Surface};

/// How long a TLS handshake may take.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// The TLS acceptor of the listener `surface` is, if it has TLS: `admin.tls` (with `client_ca`) or
/// `console.tls`, read from their secret sources.
pub async fn acceptor(admin: &Admin, surface: Surface) -> Result<Option<TlsAcceptor>, String> {
    let generation = admin.state.current();
    let config = &generation.config;
    let secrets = generation.credentials.secrets();
    let read = |at: &'static str, r| async move {
        secrets
            .stored(r)
            .await
            .map(|s| s.expose_secret().as_bytes().to_vec())
            .map_err(|e| format!("{at}: {e}"))
    };
    match surface {
        Surface::Admin { .. } => {
            let Some(tls) = &config.admin_tls else { return Ok(None) };
            let (cert, key) = (
                read("admin.tls.cert", &tls.cert).await?,
                read("admin.tls.key", &tls.key).await?,
            );
            let ca = match &tls.client_ca {
                Some(r) => Some(read("admin.tls.client_ca", r).await?),
                None => None,
            };
            crate::tls::listener::acceptor("admin.tls", &cert, &key, ca.as_deref(), &[b"http/1.1"]).map(Some)
        }
        Surface::Console => {
            let Some((cert, key)) = config.console.as_ref().and_then(|c| c.tls.as_ref()) else {
                return Ok(None);
            };
            let (cert, key) = (
                read("console.tls.cert", cert).await?,
                read("console.tls.key", key).await?,
            );
            crate::tls::listener::acceptor("console.tls", &cert, &key, None, &[b"http/1.1"]).map(Some)
        }
    }
}

/// Serve `surface` on `listener` (through `tls` when given) until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    surface: Surface,
    admin: Arc<Admin>,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => return,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!("admin accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let (admin, tls) = (admin.clone(), tls.clone());
        tokio::spawn(async move {
            match tls {
                None => {
                    let conn = Conn {
                        surface,
                        client_cert: false,
                    };
                    connection(TokioIo::new(stream), admin, conn, peer).await;
                }
                Some(acceptor) => {
                    let tls = match tokio::time::timeout(HANDSHAKE, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => tls,
                        Ok(Err(e)) => return tracing::debug!(%peer, "admin TLS handshake failed: {e}"),
                        Err(_) => return tracing::debug!(%peer, "admin TLS handshake timed out"),
                    };
                    let client_cert = tls.get_ref().1.peer_certificates().is_some_and(|c| !c.is_empty());
                    let conn = Conn { surface, client_cert };
                    connection(TokioIo::new(tls), admin, conn, peer).await;
                }
            }
        });
    }
}

/// One HTTP/1.1 connection.
async fn connection<I>(io: TokioIo<I>, admin: Arc<Admin>, conn: Conn, peer: SocketAddr)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req: Request<Incoming>| {
        let admin = admin.clone();
        async move { Ok::<_, Infallible>(handle(&admin, conn, req, peer).await) }
    });
    let result = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(10))
        .serve_connection(io, service)
        .await;
    if let Err(e) = result {
        tracing::debug!(%peer, "admin connection ended: {e}");
    }
}
