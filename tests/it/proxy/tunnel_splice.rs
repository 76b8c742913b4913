//! A blind tunnel (`tls: tunnel`) is moved by splice(2): bulk both ways arrives intact, the bytes a client
//! sends before cordon's 200 (its ClientHello, pipelined after the CONNECT) are delivered first, every byte is
//! counted in the tunnel's record, and the sandbox's byte budget still ends it.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustls::{ClientConfig, ClientConnection, StreamOwned};
use rustls_pki_types::ServerName;
use tokio::net::TcpListener;

use crate::rigs::client::{auth, hash};
use crate::rigs::proxy::{Proxy, proxy};
use crate::rigs::tls::{TestCa, test_ca};

const CHUNK: usize = 64 * 1024;

/// A TLS server for `bulk.test` on `ip` that echoes every byte.
async fn tls_echo(ip: &str, ca: &TestCa) -> SocketAddr {
    let listener = TcpListener::bind((ip, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(ca.server_config(&["bulk.test"]));
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(tcp).await {
                    let (mut r, mut w) = tokio::io::split(tls);
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                }
            });
        }
    });
    addr
}

async fn rig(extra: &str) -> (Proxy, SocketAddr, Arc<ClientConfig>) {
    let ca = test_ca("bulk test CA");
    let up = tls_echo("127.0.0.6", &ca).await;
    let yaml = format!(
        r#"
network:
  allow_cidrs: ["127.0.0.0/8"]
  hosts: {{ bulk.test: 127.0.0.6 }}
{extra}
sandboxes:
  - {{ id: sb, user: u, token_sha256: {h}, policy: p }}
policies:
  p:
    allow:
      - {{ host: bulk.test, ports: [{port}], tls: tunnel }}
"#,
        h = hash("tok"),
        port = up.port(),
    );
    let p = proxy(&yaml).await;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pki_types::pem::PemObject::pem_slice_iter(ca.pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let cfg = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    (p, up, Arc::new(cfg))
}

/// A TLS session to bulk.test through the proxy, its ClientHello written in the same packet as the CONNECT,
/// before cordon's 200 (blocking I/O: run it off the runtime).
fn pipelined(
    proxy: SocketAddr,
    up: SocketAddr,
    cfg: Arc<ClientConfig>,
) -> StreamOwned<ClientConnection, std::net::TcpStream> {
    let mut conn = ClientConnection::new(cfg, ServerName::try_from("bulk.test").unwrap()).unwrap();
    let mut first = format!(
        "CONNECT bulk.test:{port} HTTP/1.1\r\nHost: bulk.test:{port}\r\n{}\r\n",
        auth("sb", "tok"),
        port = up.port()
    )
    .into_bytes();
    conn.write_tls(&mut first).unwrap();
    let mut sock = std::net::TcpStream::connect(proxy).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    sock.write_all(&first).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        sock.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&head));
    StreamOwned::new(conn, sock)
}

/// Chunk `i` of the test's data: every byte depends on its place, so a lost, doubled or reordered piece shows.
fn chunk(i: usize) -> Vec<u8> {
    (0..CHUNK).map(|j| ((i * 7919 + j * 31) % 251) as u8).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn bulk_goes_both_ways_intact_and_every_byte_is_counted() {
    let (p, up, cfg) = rig("").await;
    let addr = p.addr;
    let rounds = 128; // 8 MiB each way
    tokio::task::spawn_blocking(move || {
        let mut tls = pipelined(addr, up, cfg);
        let mut back = vec![0u8; CHUNK];
        for i in 0..rounds {
            let sent = chunk(i);
            tls.write_all(&sent).unwrap();
            tls.read_exact(&mut back).unwrap();
            assert!(back == sent, "chunk {i} came back altered");
        }
        tls.conn.send_close_notify();
        let _ = tls.flush();
    })
    .await
    .unwrap();
    let record = p
        .audit
        .wait_any(|r| r.kind == cordon::audit::Kind::Connect && r.bytes_down > 0)
        .await
        .expect("the tunnel's record");
    let payload = (rounds * CHUNK) as u64;
    // TLS adds its records' framing on top of the payload, both ways.
    for (way, bytes) in [("up", record.bytes_up), ("down", record.bytes_down)] {
        assert!(
            (payload..payload + payload / 20).contains(&bytes),
            "{way}: {bytes} bytes counted for {payload} of payload"
        );
    }
    assert_eq!(record.reason, None, "{record:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spent_budget_ends_a_spliced_tunnel() {
    let (p, up, cfg) = rig("limits:\n  per_sandbox:\n    download: 256KiB\n    budget_window: 1h\n").await;
    let addr = p.addr;
    let got = tokio::task::spawn_blocking(move || {
        let mut tls = pipelined(addr, up, cfg);
        let mut back = vec![0u8; CHUNK];
        let mut got = 0usize;
        for i in 0..32 {
            if tls.write_all(&chunk(i)).is_err() || tls.read_exact(&mut back).is_err() {
                break;
            }
            got += CHUNK;
        }
        got
    })
    .await
    .unwrap();
    assert!(got < 32 * CHUNK, "2 MiB came back through a 256 KiB budget");
    assert!(
        got >= 2 * CHUNK,
        "the tunnel ended at {got} bytes, well before its budget"
    );
    let record = p
        .audit
        .wait_any(|r| r.kind == cordon::audit::Kind::Connect && r.reason.is_some())
        .await
        .expect("the tunnel's record");
    assert_eq!(record.reason.as_deref(), Some("byte_budget"), "{record:?}");
    assert_eq!(record.decision, cordon::audit::Verdict::Deny, "{record:?}");
}
