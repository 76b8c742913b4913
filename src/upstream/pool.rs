//! cordon's own connections to upstreams: dialled through the address guard, TLS always verified
//! (webpki-roots plus `upstream.extra_roots`), ALPN chosen independently of the sandbox side, pooled
//! per sandbox so that one sandbox's connections never carry another's requests.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::Uri;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rustls::ClientConfig;
use rustls_pki_types::CertificateDer;
use tokio::net::TcpStream;

use crate::body::ProxyBody;
use crate::names::SandboxId;
use crate::net::{DialError, Dialer};
use crate::target::Target;

/// The address a pooled connection was dialled to, attached to each response's extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DialledAddr(pub SocketAddr);

/// The TLS client configuration: verification always on, against the built-in roots and `extra`.
pub(crate) fn client_config(extra: &[CertificateDer<'static>]) -> Result<ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for (i, cert) in extra.iter().enumerate() {
        roots
            .add(cert.clone())
            .map_err(|e| format!("upstream.extra_roots certificate #{i} is not usable as a root: {e}"))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup failed: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// Resolves through the guard and dials the checked address (a tower `Service<Uri>` for hyper's pool).
#[derive(Clone)]
pub(crate) struct GuardedConnector {
    dialer: Dialer,
}

/// A dialled TCP connection that remembers where it went.
pub(crate) struct GuardedStream {
    io: TokioIo<TcpStream>,
    addr: SocketAddr,
}

impl tower_service::Service<Uri> for GuardedConnector {
    type Response = GuardedStream;
    type Error = DialError;
    type Future = Pin<Box<dyn Future<Output = Result<GuardedStream, DialError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let dialer = self.dialer.clone();
        Box::pin(async move {
            let default_port = if uri.scheme_str() == Some("https") { 443 } else { 80 };
            let authority = uri.authority().map(|a| a.as_str()).unwrap_or("");
            let target =
                Target::from_host_value(authority.as_bytes(), default_port).map_err(|e| DialError::Resolve {
                    target: Target {
                        host: crate::target::Host::Name(authority.to_string()),
                        port: default_port,
                    },
                    detail: e.to_string(),
                })?;
            let (stream, addr) = dialer.dial(&target).await?;
            Ok(GuardedStream {
                io: TokioIo::new(stream),
                addr,
            })
        })
    }
}

impl Connection for GuardedStream {
    fn connected(&self) -> Connected {
        Connected::new().extra(DialledAddr(self.addr))
    }
}

impl hyper::rt::Read for GuardedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for GuardedStream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// A pooled client for one sandbox.
pub(crate) type UpstreamClient = Client<Timed<HttpsConnector<GuardedConnector>>, ProxyBody>;

/// The upstream's TLS handshake (with the connection before it) took longer than allowed.
#[derive(Debug, thiserror::Error)]
#[error("no TLS session with the upstream within {0:?}")]
pub(crate) struct HandshakeTimedOut(pub Duration);

/// A connector bounded in time: dialling plus the TLS handshake must finish within `limit`.
#[derive(Clone)]
pub(crate) struct Timed<C> {
    inner: C,
    limit: Duration,
}

impl<C> tower_service::Service<Uri> for Timed<C>
where
    C: tower_service::Service<Uri> + Clone + Send + 'static,
    C::Future: Send + 'static,
    C::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = C::Response;
    type Error = Box<dyn std::error::Error + Send + Sync>;
    type Future = Pin<Box<dyn Future<Output = Result<C::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let limit = self.limit;
        let connecting = self.inner.call(uri);
        Box::pin(async move {
            match tokio::time::timeout(limit, connecting).await {
                Ok(r) => r.map_err(Into::into),
                Err(_) => Err(Box::new(HandshakeTimedOut(limit)) as Self::Error),
            }
        })
    }
}

/// The two clients of one sandbox.
#[derive(Clone)]
pub(crate) struct SandboxClients {
    /// Negotiates h2 or HTTP/1.1 with the upstream, whatever the sandbox spoke.
    pub(crate) any: UpstreamClient,
    /// HTTP/1.1 only: for requests that upgrade the connection (WebSocket), which need HTTP/1.1 end to end.
    pub(crate) http1: UpstreamClient,
}

/// Per-sandbox connection pools.
pub(crate) struct Upstreams {
    dialer: Dialer,
    tls: ClientConfig,
    pool_idle: Duration,
    connect_limit: Duration,
    clients: moka::sync::Cache<SandboxId, Arc<SandboxClients>>,
}

impl Upstreams {
    /// Pools dialling through `dialer`, verifying TLS with `tls`; a new connection (dial and TLS handshake)
    /// must be ready within `connect_limit`.
    pub(crate) fn new(dialer: Dialer, tls: ClientConfig, pool_idle: Duration, connect_limit: Duration) -> Upstreams {
        Upstreams {
            dialer,
            tls,
            pool_idle,
            connect_limit,
            // A sandbox idle for a while loses its pool; it is rebuilt on its next request.
            clients: moka::sync::Cache::builder()
                .max_capacity(100_000)
                .time_to_idle(pool_idle.max(Duration::from_secs(60)))
                .build(),
        }
    }

    /// The clients of one sandbox (created on first use).
    pub(crate) fn for_sandbox(&self, sandbox: &SandboxId) -> Arc<SandboxClients> {
        if let Some(clients) = self.clients.get(sandbox) {
            return clients;
        }
        self.clients.get_with(sandbox.clone(), || {
            Arc::new(SandboxClients {
                any: self.client(true),
                http1: self.client(false),
            })
        })
    }

    fn client(&self, h2: bool) -> UpstreamClient {
        let connector = GuardedConnector {
            dialer: self.dialer.clone(),
        };
        let builder = HttpsConnectorBuilder::new()
            .with_tls_config(self.tls.clone())
            .https_or_http()
            .enable_http1();
        let https = if h2 {
            builder.enable_http2().wrap_connector(connector)
        } else {
            builder.wrap_connector(connector)
        };
        let https = Timed {
            inner: https,
            limit: self.connect_limit,
        };
        Client::builder(TokioExecutor::new())
            .pool_idle_timeout(self.pool_idle)
            .pool_timer(TokioTimer::new())
            .timer(TokioTimer::new())
            .build(https)
    }
}
