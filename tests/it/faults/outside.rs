//! Faults, each through the binary: what the sandbox sees and what the audit says when an upstream resets or
//! stalls, when the configuration file is broken, emptied or deleted, when cordon is killed under load, when
//! it runs out of file descriptors, and when its store is locked by another process.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::rigs::ports::free_port;
use crate::rigs::process::{BIN, Log, spawn_cordon};
use crate::rigs::proxy::config;
use crate::rigs::tls::test_ca;
use crate::rigs::wait::{TimedChild, Within};

/// How a misbehaving upstream behaves on each connection.
#[derive(Clone, Copy)]
enum Fault {
    /// Reads the ClientHello, then resets the connection.
    ResetInHandshake,
    /// Completes TLS, answers 200 with a 1 MB Content-Length, sends 64 KB of it, then resets.
    ResetMidBody,
    /// Accepts and never says a word.
    StallHandshake,
    /// Completes TLS, reads the request, never answers.
    StallHeaders,
}

/// A TLS upstream on 127.0.0.2 that misbehaves as `fault` (certificate for allowed.test from `tls`).
#[expect(
    deprecated,
    reason = "SO_LINGER 0 is how a test upstream sends a reset; its blocking drop is instant"
)]
async fn faulty(fault: Fault, tls: Arc<rustls::ServerConfig>) -> u16 {
    let listener = TcpListener::bind("127.0.0.2:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    // It speaks HTTP/1.1 by hand: it must not be offered HTTP/2.
    let mut http1 = (*tls).clone();
    http1.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(http1));
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                match fault {
                    Fault::ResetInHandshake => {
                        let mut tcp = tcp;
                        let _ = tcp.read(&mut [0u8; 512]).await;
                        let _ = tcp.set_linger(Some(Duration::ZERO));
                    }
                    Fault::StallHandshake => {
                        let _keep = tcp;
                        tokio::time::sleep(Duration::from_secs(60)).await;
                    }
                    Fault::ResetMidBody | Fault::StallHeaders => {
                        let _ = tcp.set_linger(Some(Duration::ZERO));
                        let Ok(mut tls) = acceptor.accept(tcp).await else {
                            return;
                        };
                        let _ = tls.read(&mut [0u8; 4096]).await;
                        if matches!(fault, Fault::StallHeaders) {
                            tokio::time::sleep(Duration::from_secs(60)).await;
                            return;
                        }
                        let head = "HTTP/1.1 200 OK\r\ncontent-length: 1000000\r\ncontent-type: text/plain\r\n\r\n";
                        let _ = tls.write_all(head.as_bytes()).await;
                        let _ = tls.write_all(&[b'x'; 65536]).await;
                        let _ = tls.flush().await;
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        // Dropped with linger 0: a reset, not a close.
                    }
                }
            });
        }
    });
    port
}

/// A cordon process with `extra` top-level YAML, its audit in `dir/audit.jsonl`.
struct Cordon {
    child: Child,
    port: u16,
    config: PathBuf,
    dir: PathBuf,
}

impl Drop for Cordon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.timed_wait();
    }
}

impl Cordon {
    async fn start(dir: &Path, extra: &str) -> Cordon {
        let port = free_port();
        let top = format!(
            "listen: {{ proxy: 127.0.0.1:{port} }}\naudit: {{ path: {d}/audit.jsonl }}\nca: {{ dir: {d}/cas }}\n\
             upstream: {{ extra_roots: [{d}/upstream-ca.pem] }}\n{extra}",
            d = dir.display()
        );
        let path = dir.join("cordon.yaml");
        let mut yaml = config(1, 1, &top);
        if extra.contains("timeouts:") {
            yaml = yaml.replace("timeouts:\n  request_headers: 2s\n  drain: 3s\n", "");
        }
        std::fs::write(&path, yaml).unwrap();
        let child = spawn_cordon(&path, port, &[]).await;
        Cordon {
            child,
            port,
            config: path,
            dir: dir.to_path_buf(),
        }
    }

    fn ca(&self, sandbox: &str) -> PathBuf {
        let out = Command::new(BIN)
            .args(["ca", "export", "--sandbox", sandbox, "--config"])
            .arg(&self.config)
            .timed_output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let path = self.dir.join(format!("{sandbox}-ca.pem"));
        std::fs::write(&path, out.stdout).unwrap();
        path
    }

    /// curl as sb2 (report mode: any destination the network allows) to `url`: (curl's exit code, status).
    fn curl(&self, ca: &Path, url: &str) -> (i32, u16) {
        let out = crate::rigs::process::curl()
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20"])
            .args(["-x", &format!("http://sb2:tok2@127.0.0.1:{}", self.port)])
            .arg("--cacert")
            .arg(ca)
            .arg(url)
            .timed_output()
            .unwrap();
        let status = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(0);
        (out.status.code().unwrap_or(-1), status)
    }

    /// The audit records written so far.
    fn audit(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.join("audit.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The first audit record for `port` of kind https, waiting for it a little.
    async fn record_for(&self, port: u16) -> Value {
        for _ in 0..50 {
            if let Some(r) = self
                .audit()
                .into_iter()
                .find(|r| r["kind"] == "https" && r["port"] == port)
            {
                return r;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no audit record for port {port}: {:?}", self.audit());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn upstreams_that_reset_or_stall_get_their_status_and_their_record() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let upstream_ca = test_ca("faulty upstream CA");
    std::fs::write(d.join("upstream-ca.pem"), &upstream_ca.pem).unwrap();
    let tls = upstream_ca.server_config(&["allowed.test"]);
    let c = Cordon::start(
        d,
        "timeouts: { request_headers: 5s, connect: 1s, tls_handshake: 1s, upstream_headers: 4s }\n",
    )
    .await;
    let ca = c.ca("sb2");
    let url = |port: u16| format!("https://allowed.test:{port}/x");

    // Reset during the upstream's handshake: 502, recorded as an upstream failure.
    let port = faulty(Fault::ResetInHandshake, tls.clone()).await;
    let (_, status) = c.curl(&ca, &url(port));
    assert_eq!(status, 502);
    let r = c.record_for(port).await;
    assert_eq!(
        (r["status"].as_u64(), r["reason"].as_str()),
        (Some(502), Some("upstream_failed")),
        "{r}"
    );
    assert_eq!(r["side"], "upstream", "the upstream's failure is on its side: {r}");
    // A handshake that never ends: 504 after timeouts.tls_handshake.
    let port = faulty(Fault::StallHandshake, tls.clone()).await;
    let started = Instant::now();
    let (_, status) = c.curl(&ca, &url(port));
    assert_eq!(status, 504);
    // The handshake's limit counts from the dial: timeouts.connect + timeouts.tls_handshake, before upstream_headers.
    assert!(
        started.elapsed() < Duration::from_millis(3900),
        "{:?}",
        started.elapsed()
    );
    let r = c.record_for(port).await;
    assert_eq!(
        (r["status"].as_u64(), r["reason"].as_str()),
        (Some(504), Some("tls_handshake_timeout")),
        "{r}"
    );
    assert_eq!(r["side"], "upstream", "the upstream's failure is on its side: {r}");
    // A response head that never comes: 504 after timeouts.upstream_headers.
    let port = faulty(Fault::StallHeaders, tls.clone()).await;
    let (_, status) = c.curl(&ca, &url(port));
    assert_eq!(status, 504);
    let r = c.record_for(port).await;
    assert_eq!(
        (r["status"].as_u64(), r["reason"].as_str()),
        (Some(504), Some("upstream_timeout")),
        "{r}"
    );
    assert_eq!(r["side"], "upstream", "the upstream's failure is on its side: {r}");
    // A reset in the middle of the body: the sandbox got the head and part of the body, then the connection
    // ends short of the Content-Length (curl: exit 18 or 56); the record says how much went through.
    let port = faulty(Fault::ResetMidBody, tls.clone()).await;
    let (code, status) = c.curl(&ca, &url(port));
    assert_eq!(status, 200);
    assert!([18, 56, 92].contains(&code), "curl exit {code}");
    let r = c.record_for(port).await;
    let down = r["bytes_down"].as_u64().unwrap_or(0);
    assert!(down < 1_000_000, "{r}");
    // And cordon carries on.
    let port = faulty(Fault::StallHeaders, tls).await;
    assert_eq!(c.curl(&ca, &url(port)).1, 504);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broken_emptied_or_deleted_configuration_keeps_the_last_good_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let upstream = crate::rigs::upstreams::upstream("127.0.0.2").await;
    let port = free_port();
    let good = config(
        upstream.addr.port(),
        1,
        &format!("listen: {{ proxy: 127.0.0.1:{port} }}\ncontrol: {{ watch: true }}\n"),
    );
    let path = d.join("cordon.yaml");
    std::fs::write(&path, &good).unwrap();
    let mut child = spawn_cordon(&path, port, &[]).await;
    let log = Log::follow(&mut child);
    let proxy: SocketAddr = ([127, 0, 0, 1], port).into();
    let up = upstream.addr.port();
    let get = || async move {
        let req = format!(
            "GET http://allowed.test:{up}/ok HTTP/1.1\r\nHost: allowed.test:{up}\r\n{}Connection: close\r\n\r\n",
            crate::rigs::client::auth("sb1", "tok1")
        );
        crate::rigs::client::send(proxy, &req).await.status
    };
    assert_eq!(get().await, 200);
    // Broken, then emptied, then deleted: each refused and said, the running configuration kept.
    for (n, (what, change)) in [
        ("broken", Some("policies: [this is not a map\n")),
        ("empty", Some("# nothing here yet\n\n")),
        ("deleted", None),
    ]
    .into_iter()
    .enumerate()
    {
        match change {
            Some(text) => std::fs::write(&path, text).unwrap(),
            None => std::fs::remove_file(&path).unwrap(),
        }
        let said = log.until("reload refused", n + 1).await;
        assert_eq!(get().await, 200, "{what}: {said}");
    }
    let said = log.until("reload refused", 3).await;
    assert!(said.contains("is empty; the running configuration stays"), "{said}");
    assert!(said.contains("cannot read"), "{said}");
    // Put back, edited (sb1 may no longer go there): applied.
    std::fs::write(
        &path,
        good.replace("      - host: allowed.test\n", "      - host: elsewhere.test\n"),
    )
    .unwrap();
    log.until("configuration reloaded", 1).await;
    assert_eq!(get().await, 403);
    let _ = child.kill();
    let _ = child.timed_wait();
}
