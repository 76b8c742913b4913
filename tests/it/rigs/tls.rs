//! TLS for the test rig: a test CA made at test time, HTTPS upstreams signed by it, a proxy config that
//! trusts it upstream and keeps sandbox CAs in a temporary folder, and a rustls client through an intercepting
//! CONNECT.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::ServerConfig;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::rigs::client::*;
use crate::rigs::proxy::*;
use crate::rigs::upstreams::*;

/// CONNECT as `who`, then a rustls handshake for `sni` trusting `ca_file`, offering `alpn`.
pub(crate) async fn tls_as(
    proxy: std::net::SocketAddr,
    who: (&str, &str),
    connect: &str,
    sni: &str,
    ca_file: &std::path::Path,
    alpn: &[u8],
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let mut s = TcpStream::connect(proxy).await?;
    let raw = format!(
        "CONNECT {connect} HTTP/1.1\r\nHost: {connect}\r\n{}\r\n",
        auth(who.0, who.1)
    );
    s.write_all(raw.as_bytes()).await?;
    assert_eq!(read_connect_response(&mut s).await, 200);
    let mut roots = rustls::RootCertStore::empty();
    for cert in cordon::tls::pem::read_pem_certs(ca_file).unwrap() {
        roots.add(cert).unwrap();
    }
    let mut cfg = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![alpn.to_vec()];
    tokio_rustls::TlsConnector::from(Arc::new(cfg))
        .connect(ServerName::try_from(sni.to_string()).unwrap(), s)
        .await
}

pub(crate) async fn read_tls_response(tls: &mut tokio_rustls::client::TlsStream<TcpStream>) -> String {
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(std::time::Duration::from_secs(5), tls.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// A CA of the test's own.
pub(crate) struct TestCa {
    pub pem: String,
    issuer: Issuer<'static, KeyPair>,
}

pub(crate) fn test_ca(name: &str) -> TestCa {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::default();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let cert = params.self_signed(&key).unwrap();
    let pem = cert.pem();
    let issuer = Issuer::from_ca_cert_der(cert.der(), key).unwrap();
    TestCa { pem, issuer }
}

impl TestCa {
    /// A certificate for these names signed by this CA and its key, both PEM (for servers the tests start).
    pub(crate) fn pem_pair(&self, names: &[&str]) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let params = CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    /// A server config for these names, signed by this CA, ALPN h2 + http/1.1.
    pub(crate) fn server_config(&self, names: &[&str]) -> Arc<ServerConfig> {
        let key = KeyPair::generate().unwrap();
        let params = CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let mut cfg = ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![CertificateDer::from(cert.der().to_vec())], key)
            .unwrap();
        cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Arc::new(cfg)
    }
}

/// An HTTPS upstream (h2 or HTTP/1.1 by ALPN) on `ip:0`, with the same handler as the plain one.
pub(crate) async fn https_upstream(ip: &str, tls: Arc<ServerConfig>) -> Upstream {
    https_upstream_on(TcpListener::bind((ip, 0)).await.unwrap(), tls)
}

/// The same HTTPS upstream on a listener already bound (in another network namespace, say).
pub(crate) fn https_upstream_on(listener: TcpListener, tls: Arc<ServerConfig>) -> Upstream {
    let addr: SocketAddr = listener.local_addr().unwrap();
    let accepts = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (a, s) = (accepts.clone(), seen.clone());
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            a.fetch_add(1, Ordering::SeqCst);
            let (acceptor, svc) = (acceptor.clone(), upstream_service(s.clone()));
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(stream).await {
                    serve_by_alpn(tls, svc).await;
                }
            });
        }
    });
    Upstream { addr, accepts, seen }
}

/// Serve one accepted TLS connection with `svc`, over h2 or HTTP/1.1 as ALPN chose.
pub(crate) async fn serve_by_alpn<S, B>(tls: tokio_rustls::server::TlsStream<tokio::net::TcpStream>, svc: S)
where
    S: hyper::service::Service<hyper::Request<hyper::body::Incoming>, Response = hyper::Response<B>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
    let io = hyper_util::rt::TokioIo::new(tls);
    if h2 {
        let _ = hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .serve_connection(io, svc)
            .await;
    } else {
        let _ = hyper::server::conn::http1::Builder::new()
            .serve_connection(io, svc)
            .with_upgrades()
            .await;
    }
}

/// Everything an interception test needs.
pub(crate) struct TlsRig {
    pub yaml: String,
    pub up: Upstream,
    pub proxy: Proxy,
    pub ca_dir: tempfile::TempDir,
    pub upstream_ca: TestCa,
}

impl TlsRig {
    /// The PEM file of a sandbox's CA, as `cordon ca export` writes it (creating the CA for its policy).
    pub(crate) fn sandbox_ca_file(&self, sandbox: &str) -> std::path::PathBuf {
        let config = cordon::config::Config::parse("test.yaml", &self.yaml).unwrap();
        let spec = config.sandbox(sandbox).unwrap();
        let scope = cordon::tls::ca::scope_for(&config.policies[&spec.policy]);
        let store = cordon::tls::ca::CaStore::new(config.ca.dir.clone());
        let ca = store.load_or_create(&spec.id, &scope).unwrap();
        let path = self.ca_dir.path().join(format!("{sandbox}.pem"));
        std::fs::write(&path, ca.cert_pem()).unwrap();
        path
    }

    /// `curl` through the proxy as `id:token`, trusting `cacert`.
    pub(crate) fn curl(&self, id: &str, token: &str, cacert: &std::path::Path) -> std::process::Command {
        let mut c = crate::rigs::process::curl();
        c.args(["-x", &format!("http://{id}:{token}@{}", self.proxy.addr)]);
        c.arg("--cacert").arg(cacert);
        c
    }

    /// The upstream's https URL for `host` and `path`.
    pub(crate) fn url(&self, host: &str, path: &str) -> String {
        format!("https://{host}:{}{path}", self.up.addr.port())
    }
}

/// An HTTPS upstream on 127.0.0.2 for `allowed.test` and friends, and a proxy trusting its CA.
pub(crate) async fn tls_rig(extra_top: &str) -> TlsRig {
    let upstream_ca = test_ca("upstream test CA");
    let up = https_upstream(
        "127.0.0.2",
        upstream_ca.server_config(&[
            "allowed.test",
            "api.allowed.test",
            "unlisted.test",
            "pinned.test",
            "127.0.0.2",
        ]),
    )
    .await;
    let ca_dir = tempfile::tempdir().unwrap();
    let roots = ca_dir.path().join("upstream-ca.pem");
    std::fs::write(&roots, &upstream_ca.pem).unwrap();
    let top = format!(
        "ca: {{ dir: {} }}\nupstream: {{ extra_roots: [{}] }}\n{extra_top}",
        ca_dir.path().join("cas").display(),
        roots.display()
    );
    let yaml = config(up.addr.port(), 1, &top);
    let proxy = proxy(&yaml).await;
    TlsRig {
        yaml,
        up,
        proxy,
        ca_dir,
        upstream_ca,
    }
}

/// A WebSocket echo server over TLS on `ip:0`.
pub(crate) async fn wss_echo(ip: &str, tls: Arc<ServerConfig>) -> SocketAddr {
    use futures_util::{SinkExt, StreamExt};
    let listener = TcpListener::bind((ip, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else { return };
                let Ok(mut ws) = tokio_tungstenite::accept_async(tls).await else {
                    return;
                };
                while let Some(Ok(msg)) = ws.next().await {
                    if msg.is_text() || msg.is_binary() {
                        let _ = ws.send(msg).await;
                    }
                }
            });
        }
    });
    addr
}
