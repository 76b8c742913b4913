//! Control-plane hardening, tried the way an attacker would, through the binary: revoked credentials after
//! a restart or a lost store, ids that collide with cordon's own files, creation that fails half-way, and
//! cordon's own listeners as destinations.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::cli::BIN;
use crate::control_procs::{create, curl_status, replica, upstream};
use crate::rig::{config, free_port};

/// A raw admin request to a cordon on `port`: (status, body as JSON or Null).
pub(crate) async fn admin(port: u16, token: &str, method: &str, path: &str, body: &str) -> (u16, Value) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: admin\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    let text = String::from_utf8_lossy(&out).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).unwrap_or("0").parse().unwrap();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

fn token(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("admin-token"))
        .unwrap()
        .trim()
        .to_string()
}

fn listed(v: &Value) -> Vec<String> {
    v["sandboxes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["id"].as_str().map(String::from))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_revoked_credential_is_never_accepted_again() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A persistent key without a persistent store would forget revocations at the next start: refused, with
    // the fix named, by `cordon check` and by `cordon run`.
    let yaml = config(
        1,
        1,
        &format!("control:\n  signing_key: {{ file: {}/signing-key }}\n", d.display()),
    );
    let path = d.join("no-store.yaml");
    std::fs::write(&path, yaml).unwrap();
    for cmd in ["check", "run"] {
        let out = std::process::Command::new(BIN)
            .args([cmd, "--config"])
            .arg(&path)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "cordon {cmd} accepted a signing key without a store"
        );
        assert!(
            err.contains("control.signing_key") && err.contains("control.store"),
            "{cmd}: {err}"
        );
    }

    // With a store: revoked, restarted, replayed: refused.
    let up = upstream(d).await;
    let port = up.addr.port();
    let url = format!("https://allowed.test:{port}/hello");
    let a = replica(d, "a", port, true).await;
    let (revoked, rcred, rca) = create(&a, d).await;
    let (kept, kcred, kca) = create(&a, d).await;
    assert_eq!(curl_status(&a, &revoked, &rcred, &rca, &url), 200);
    a.admin.revoke(&revoked).await.unwrap();
    drop(a);
    let a = replica(d, "a", port, true).await;
    assert_eq!(curl_status(&a, &revoked, &rcred, &rca, &url), 0, "407 after a restart");
    assert_eq!(curl_status(&a, &kept, &kcred, &kca, &url), 200);
    drop(a);

    // The store is lost (deleted, or a fresh one put in its place) but the key is not: a credential whose
    // sandbox the store does not know is refused, however well it is signed.
    for f in ["cordon.db", "cordon.db-wal", "cordon.db-shm"] {
        let _ = std::fs::remove_file(d.join(f));
    }
    let a = replica(d, "a", port, true).await;
    assert_eq!(
        curl_status(&a, &kept, &kcred, &kca, &url),
        0,
        "a credential the store does not know was accepted"
    );
    assert_eq!(curl_status(&a, &revoked, &rcred, &rca, &url), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn ids_that_name_cordons_files_are_refused_and_creation_is_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let up = upstream(d).await;
    let r = replica(d, "ids", up.addr.port(), true).await;
    let tok = token(d);
    let port = r.admin_port;
    for id in [".lock", ".", "..", ".hidden"] {
        let body = format!(r#"{{"user": "mallory", "policy": "web", "id": "{id}"}}"#);
        let (status, v) = admin(port, &tok, "POST", "/v1/sandboxes", &body).await;
        assert_eq!(status, 422, "{id}: {v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains("not starting with '.'"),
            "{v}"
        );
    }
    for (method, path) in [
        ("GET", "/v1/sandboxes/.lock"),
        ("DELETE", "/v1/sandboxes/.lock"),
        ("POST", "/v1/sandboxes/.lock/renew"),
        ("POST", "/v1/sandboxes/.lock/credentials"),
    ] {
        let (status, v) = admin(port, &tok, method, path, "{}").await;
        assert_eq!(status, 422, "{method} {path}: {v}");
    }
    let (_, all) = admin(port, &tok, "GET", "/v1/sandboxes", "").await;
    assert!(!listed(&all).iter().any(|id| id.starts_with('.')), "{all}");

    // The CA cannot be made (a file stands where its folder goes): 500, and no sandbox is left behind.
    let blocker = d.join("cas").join("blocked");
    std::fs::create_dir_all(blocker.parent().unwrap()).unwrap();
    std::fs::write(&blocker, "not a folder").unwrap();
    let body = r#"{"user": "alice", "policy": "web", "id": "blocked"}"#;
    let (status, v) = admin(port, &tok, "POST", "/v1/sandboxes", body).await;
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (500, Some("ca_unavailable")),
        "{v}"
    );
    let (_, all) = admin(port, &tok, "GET", "/v1/sandboxes", "").await;
    assert!(
        !listed(&all).contains(&"blocked".to_string()),
        "a sandbox without a CA was stored: {all}"
    );
    let (status, _) = admin(port, &tok, "GET", "/v1/sandboxes/blocked", "").await;
    assert_eq!(status, 404);
    // Once the way is clear, the same id is created whole.
    std::fs::remove_file(&blocker).unwrap();
    let (status, v) = admin(port, &tok, "POST", "/v1/sandboxes", body).await;
    assert_eq!(status, 201, "{v}");
    assert!(v["ca_certificate"].as_str().unwrap().contains("BEGIN CERTIFICATE"));
}

#[tokio::test(flavor = "multi_thread")]
async fn every_listener_of_cordon_is_its_own_address() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (proxy, admin_port, transparent, dns) = (free_port(), free_port(), free_port(), free_port());
    let top = format!(
        "listen: {{ proxy: 127.0.0.1:{proxy}, admin: 127.0.0.1:{admin_port}, transparent: 127.0.0.1:{transparent}, \
         dns: 127.0.0.1:{dns} }}\nca: {{ dir: {d}/cas }}\ncontrol:\n  admin_token: {{ file: {d}/admin-token }}\n",
        d = d.display()
    );
    let path = d.join("cordon.yaml");
    std::fs::write(&path, config(1, 1, &top)).unwrap();
    let mut child = crate::cli::spawn_cordon(&path, proxy, &[]).await;
    // sb2 may go anywhere (report mode) and loopback is opened by allow_cidrs: only self_address stops it.
    for (what, port) in [
        ("proxy", proxy),
        ("admin", admin_port),
        ("transparent", transparent),
        ("dns", dns),
    ] {
        let out = crate::cli::curl()
            .args(["-s", "-o", "/dev/null", "-D", "-", "--max-time", "5"])
            .args(["-x", &format!("http://sb2:tok2@127.0.0.1:{proxy}")])
            .arg(format!("http://127.0.0.1:{port}/"))
            .output()
            .unwrap();
        let head = String::from_utf8_lossy(&out.stdout).to_lowercase();
        assert!(
            head.starts_with("http/1.1 403") && head.contains("x-cordon-reason: self_address"),
            "{what} listener on {port}: {head}"
        );
    }
    let _ = child.kill();
    let _ = child.wait();
    tokio::time::sleep(Duration::from_millis(10)).await;
}
