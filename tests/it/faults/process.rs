//! Faults of cordon's own process, through the binary: killed outright under load (it restarts clean: no stale
//! lock, no corrupt CA, vault or store), out of file descriptors (it refuses new connections with a log line and
//! recovers when they free), and its store locked by another process (writes fail with 500, what is known keeps
//! working, and it recovers when the lock goes).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::rigs::control::{admin, token};
use crate::rigs::process::BIN;
use crate::rigs::replicas::{create, curl_status, replica, upstream};
use crate::rigs::wait::{TimedChild, Within};

/// `POST /v1/sandboxes` for a sandbox of alice on policy web: (status, answer).
async fn create_any(admin_port: u16, d: &Path) -> (u16, Value) {
    admin(
        admin_port,
        &token(d),
        "POST",
        "/v1/sandboxes",
        r#"{"user": "alice", "policy": "web"}"#,
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_under_load_cordon_restarts_clean() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let up = upstream(d).await;
    let port = up.addr.port();
    let url = format!("https://allowed.test:{port}/hello");
    let a = replica(d, "a", port, false).await;
    // A secret in the vault, a run-time sandbox with its CA.
    let mut set = Command::new(BIN)
        .args(["vault", "set", "kept-secret", "--config"])
        .arg(&a.path)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    set.stdin.take().unwrap().write_all(b"s3cret-value").unwrap();
    assert!(set.timed_wait().unwrap().success());
    let (id, cred, ca) = create(&a, d).await;
    assert_eq!(curl_status(&a, &id, &cred, &ca, &url), 200);
    let ca_before = std::fs::read_to_string(&ca).unwrap();

    // Load: requests in flight and sandboxes being created (CAs and store writes) when the SIGKILL comes.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut load = Vec::new();
    for _ in 0..4 {
        let (stop, url, id, cred, ca, proxy) =
            (stop.clone(), url.clone(), id.clone(), cred.clone(), ca.clone(), a.proxy);
        load.push(std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = crate::rigs::process::curl()
                    .args(["-s", "-o", "/dev/null", "--max-time", "2"])
                    .args(["-x", &format!("http://{id}:{cred}@127.0.0.1:{proxy}")])
                    .arg("--cacert")
                    .arg(&ca)
                    .arg(&url)
                    .timed_output();
            }
        }));
    }
    let (admin_port, tok) = (a.admin_port, token(d));
    let creating = tokio::spawn(async move {
        for i in 0..200 {
            let body = format!(r#"{{"user": "alice", "policy": "web", "id": "load-{i}"}}"#);
            let _ = admin(admin_port, &tok, "POST", "/v1/sandboxes", &body).await;
        }
    });
    tokio::time::sleep(Duration::from_millis(700)).await;
    let mut a = a;
    a.child.kill().unwrap();
    a.child.timed_wait().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for t in load {
        t.join().unwrap();
    }
    let _ = creating.await;
    drop(a);

    // Restarted: the old sandbox's credential and CA, the store, the CA folder's lock and the vault all work.
    let a = replica(d, "a", port, false).await;
    assert_eq!(
        curl_status(&a, &id, &cred, &ca, &url),
        200,
        "the run-time sandbox did not survive"
    );
    let out = Command::new(BIN)
        .args(["ca", "export", "--sandbox", "sb1", "--config"])
        .arg(&a.path)
        .timed_output()
        .unwrap();
    assert!(
        out.status.success(),
        "the CA folder: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (status, v) = admin(a.admin_port, &token(d), "GET", &format!("/v1/sandboxes/{id}"), "").await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        v["ca_certificate"].as_str().map(str::to_string),
        Some(ca_before),
        "the sandbox's CA changed"
    );
    let (status, all) = admin(a.admin_port, &token(d), "GET", "/v1/sandboxes", "").await;
    assert_eq!(status, 200);
    // Every sandbox the store lists has a usable CA (none was left half-made).
    for s in all["sandboxes"].as_array().unwrap() {
        let sid = s["id"].as_str().unwrap();
        let (status, v) = admin(a.admin_port, &token(d), "GET", &format!("/v1/sandboxes/{sid}"), "").await;
        assert!(
            status == 200 && v["ca_certificate"].as_str().is_some_and(|c| c.contains("BEGIN")),
            "{sid}: {v}"
        );
    }
    let (status, v) = create_any(a.admin_port, d).await;
    assert_eq!(status, 201, "{v}");
    let out = Command::new(BIN)
        .args(["vault", "list", "--config"])
        .arg(&a.path)
        .timed_output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "kept-secret", "{out:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn out_of_file_descriptors_it_refuses_with_a_log_line_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let up = crate::rigs::upstreams::upstream("127.0.0.2").await;
    let port = crate::rigs::ports::free_port();
    let yaml = crate::rigs::proxy::config(up.addr.port(), 1, &format!("listen: {{ proxy: 127.0.0.1:{port} }}\n"));
    let path = d.join("cordon.yaml");
    std::fs::write(&path, yaml).unwrap();
    // 64 descriptors in all: a few dozen connections exhaust them.
    let mut child = Command::new("prlimit")
        .args(["--nofile=64:64", "--", BIN, "run", "--config"])
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = crate::rigs::process::Log::follow(&mut child);
    let mut child = crate::rigs::process::await_listening(child, &format!("127.0.0.1:{port}"), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    })
    .await;
    let proxy: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
    let get = || async move {
        let req = format!(
            "GET http://allowed.test:{u}/ok HTTP/1.1\r\nHost: allowed.test:{u}\r\n{}Connection: close\r\n\r\n",
            crate::rigs::client::auth("sb1", "tok1"),
            u = up.addr.port()
        );
        let mut s = tokio::net::TcpStream::connect(proxy).await.unwrap();
        tokio::io::AsyncWriteExt::write_all(&mut s, req.as_bytes())
            .await
            .unwrap();
        tokio::time::timeout(Duration::from_secs(1), crate::rigs::client::read_response(&mut s))
            .await
            .ok()
            .flatten()
            .map(|r| r.status)
    };
    assert_eq!(get().await, Some(200));
    // Idle connections until cordon has no descriptor left.
    let mut held = Vec::new();
    for _ in 0..80 {
        held.push(tokio::net::TcpStream::connect(proxy).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(get().await, None, "a request was served with no descriptor to spare");
    let said = log.text();
    assert!(
        said.contains("accept failed") && said.contains("Too many open files"),
        "{said}"
    );
    // They go (the client closes them; cordon would also close them after the first head's deadline).
    drop(held);
    let mut back = false;
    for _ in 0..50 {
        if get().await == Some(200) {
            back = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(back, "cordon did not recover: {}", log.text());
    let _ = child.kill();
    let _ = child.timed_wait();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_locked_store_fails_writes_keeps_what_is_known_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let up = upstream(d).await;
    let port = up.addr.port();
    let url = format!("https://allowed.test:{port}/hello");
    let a = replica(d, "a", port, false).await;
    let (id, cred, ca) = create(&a, d).await;
    // Another process holds the store's write lock (an exclusive transaction).
    let mut locker = Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys, time\nc = sqlite3.connect(sys.argv[1], isolation_level=None)\n\
             c.execute('BEGIN EXCLUSIVE')\nprint('locked', flush=True)\ntime.sleep(60)",
        ])
        .arg(d.join("cordon.db"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let line = crate::rigs::wait::first_line(&mut locker, "the database locker", Duration::from_secs(30));
    assert_eq!(line.trim(), "locked");
    // A write waits out the busy timeout, then fails with 500 and says why.
    let (status, v) = create_any(a.admin_port, d).await;
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (500, Some("store_failed")),
        "{v}"
    );
    // What the replica knows keeps working.
    assert_eq!(curl_status(&a, &id, &cred, &ca, &url), 200);
    // The lock goes: writes work again.
    locker.kill().unwrap();
    locker.timed_wait().unwrap();
    let (status, v) = create_any(a.admin_port, d).await;
    assert_eq!(status, 201, "{v}");
}

#[tokio::test(flavor = "multi_thread")]
async fn openbao_down_then_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bao_port = crate::rigs::ports::free_port();
    let bao = crate::rigs::issuers::openbao_on(d, bao_port).await;
    let upstream_ca = crate::rigs::tls::test_ca("upstream test CA");
    let up = crate::rigs::tls::https_upstream("127.0.0.2", upstream_ca.server_config(&["allowed.test"])).await;
    std::fs::write(d.join("upstream-ca.pem"), &upstream_ca.pem).unwrap();
    let (port, u) = (crate::rigs::ports::free_port(), up.addr.port());
    let top = format!(
        "listen: {{ proxy: 127.0.0.1:{port} }}\naudit: {{ path: {d}/audit.jsonl }}\nca: {{ dir: {d}/cas }}\n\
         upstream: {{ extra_roots: [{d}/upstream-ca.pem] }}\n\
         vault:\n  file: {{ path: {d}/vault/v.bin }}\n  cache_ttl: 2s\n  \
         openbao: {{ addr: \"http://127.0.0.1:{bao_port}\", token_env: BAO_TOKEN }}\n\
         credentials:\n  baoed:\n    source: {{ openbao: \"cordon/test#api_key\" }}\n    bind: {{ hosts: [allowed.test], ports: [{u}] }}\n    \
         inject: {{ header: X-Bao, value: \"{{secret}}\" }}\n",
        d = d.display()
    );
    let yaml = crate::rigs::proxy::config(u, 1, &top)
        .replace("  web:\n    allow:\n", "  web:\n    credentials: [baoed]\n    allow:\n");
    let path = d.join("cordon.yaml");
    std::fs::write(&path, yaml).unwrap();
    let _cordon =
        crate::rigs::gateway::Running(crate::rigs::process::spawn_cordon(&path, port, &[("BAO_TOKEN", "root")]).await);
    let out = Command::new(BIN)
        .args(["ca", "export", "--sandbox", "sb1", "--config"])
        .arg(&path)
        .timed_output()
        .unwrap();
    let ca = d.join("sb1.pem");
    std::fs::write(&ca, out.stdout).unwrap();
    let get = || {
        let out = crate::rigs::process::curl()
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10"])
            .args(["-x", &format!("http://sb1:tok1@127.0.0.1:{port}")])
            .arg("--cacert")
            .arg(&ca)
            .arg(format!("https://allowed.test:{u}/bao"))
            .timed_output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(get(), "200");
    assert!(
        up.seen().iter().any(|s| s.header("x-bao").is_some()),
        "the secret was not injected"
    );
    // Down: the value read last is used while it is younger than vault.cache_ttl (2 s)...
    drop(bao);
    let down = std::time::Instant::now();
    assert_eq!(
        get(),
        "200",
        "an OpenBao outage failed a request while the cached value was fresh"
    );
    // ...and never after: 503 credential_unavailable, and nothing goes upstream without its credential.
    tokio::time::sleep(Duration::from_millis(2200).saturating_sub(down.elapsed())).await;
    let before = up.seen().len();
    assert_eq!(get(), "503");
    assert_eq!(
        up.seen().len(),
        before,
        "a request went upstream without its credential"
    );
    // The record is written after the answer: wait for it, a while at most.
    crate::rigs::wait::until_async("the refusal's audit record", Duration::from_secs(10), || {
        std::fs::read_to_string(d.join("audit.jsonl"))
            .unwrap_or_default()
            .lines()
            .any(|l| l.contains("\"reason\":\"credential_unavailable\""))
    })
    .await;
    // Back: served again.
    let _bao = crate::rigs::issuers::openbao_on(d, bao_port).await;
    assert_eq!(get(), "200");
}
