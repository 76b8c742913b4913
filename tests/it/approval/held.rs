//! Approvals tried the way an attacker inside a sandbox would, through the binary and its admin API: a grant
//! must die with its sandbox and its rule, one sandbox must not fill everyone's queue, and the person deciding
//! must see the whole request, escaped, and grant no more than they saw.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::rigs::control::{admin, token};
use crate::rigs::replicas::{Replica, replica_with, upstream};
use crate::rigs::wait::Within;

/// The ask rule put first in the `web` policy: every request to unlisted.test under /api/ waits for a human.
fn ask_rule(up: u16, methods: &str) -> String {
    format!(
        "      - host: unlisted.test\n        ports: [{up}]\n        paths: [\"/api/**\"]\n{methods}        action: ask\n"
    )
}

/// A replica whose `web` policy asks about unlisted.test/api/**, with these approval bounds.
async fn replica_asking(d: &Path, up: u16, approval: &str) -> Replica {
    let extra = format!("approval: {approval}\naudit: {{ path: {}/audit.jsonl }}\n", d.display());
    replica_with(d, "held", up, true, &extra, |yaml| {
        assert!(yaml.contains("  web:\n    allow:\n"), "the rig's configuration changed");
        yaml.replacen(
            "  web:\n    allow:\n",
            &format!("  web:\n    allow:\n{}", ask_rule(up, "")),
            1,
        )
    })
    .await
}

/// A run-time sandbox `id` of `user` on policy web living `ttl`: (credential, CA file).
async fn sandbox(r: &Replica, d: &Path, id: &str, user: &str, ttl: &str) -> (String, PathBuf) {
    let body = format!(r#"{{"id": "{id}", "user": "{user}", "policy": "web", "ttl": "{ttl}"}}"#);
    let (status, v) = admin(r.admin_port, &token(d), "POST", "/v1/sandboxes", &body).await;
    assert_eq!(status, 201, "{v}");
    let ca = d.join(format!("{id}-{}.pem", v["credential"].as_str().unwrap().len()));
    std::fs::write(&ca, v["ca_certificate"].as_str().unwrap()).unwrap();
    (v["credential"].as_str().unwrap().to_string(), ca)
}

/// What curl got: the status (0 if curl failed) and the response head, lower-cased.
struct Got {
    status: u16,
    head: String,
}

/// curl, in the background, as `id` through `r` to `url` (a POST of `body` when there is one).
fn curl(
    r: &Replica,
    id: &str,
    cred: &str,
    ca: &Path,
    url: &str,
    body: Option<&str>,
    extra: &[&str],
) -> tokio::task::JoinHandle<Got> {
    let mut cmd = crate::rigs::process::curl();
    cmd.args(["-s", "--max-time", "40"])
        .args(["-x", &format!("http://{id}:{cred}@127.0.0.1:{}", r.proxy)])
        .arg("--cacert")
        .arg(ca)
        .args(extra);
    if let Some(body) = body {
        cmd.args(["--data-binary", body]);
    }
    cmd.arg(url);
    tokio::task::spawn_blocking(move || {
        // The destination's answer (or cordon's, inside the tunnel), not the proxy's to CONNECT.
        let r = crate::rigs::curl::run(cmd);
        Got {
            status: r.status,
            head: r.head().to_lowercase(),
        }
    })
}

/// The pending approvals once there are `n` of them.
async fn pending(r: &Replica, d: &Path, n: usize) -> Vec<Value> {
    for _ in 0..200 {
        let (_, v) = admin(r.admin_port, &token(d), "GET", "/v1/approvals", "").await;
        let list = v["pending"].as_array().cloned().unwrap_or_default();
        if list.len() == n {
            return list;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{n} approvals never pending");
}

async fn decide(r: &Replica, d: &Path, id: &str, decision: &str, scope: &str) {
    let body = format!(r#"{{"decision": "{decision}", "scope": "{scope}"}}"#);
    let (status, v) = admin(r.admin_port, &token(d), "POST", &format!("/v1/approvals/{id}"), &body).await;
    assert_eq!(status, 200, "{v}");
}

async fn grants(r: &Replica, d: &Path) -> Vec<Value> {
    let (_, v) = admin(r.admin_port, &token(d), "GET", "/v1/grants", "").await;
    v["grants"].as_array().cloned().unwrap()
}

/// Ask once as `id`, allow it with `scope`: the request passes.
async fn grant(r: &Replica, d: &Path, id: &str, cred: &str, ca: &Path, url: &str, scope: &str) {
    let held = curl(r, id, cred, ca, url, Some("x"), &[]);
    let p = pending(r, d, 1).await;
    decide(r, d, p[0]["id"].as_str().unwrap(), "allow", scope).await;
    assert_eq!(held.await.unwrap().status, 200);
}

/// `url` as `id` is held (not granted): deny it and check the 403.
async fn held_then_denied(r: &Replica, d: &Path, id: &str, cred: &str, ca: &Path, url: &str, body: &str) {
    let held = curl(r, id, cred, ca, url, Some(body), &[]);
    let p = pending(r, d, 1).await;
    assert_eq!(p[0]["sandbox"], id, "{p:?}");
    decide(r, d, p[0]["id"].as_str().unwrap(), "deny", "once").await;
    let got = held.await.unwrap();
    assert!(
        got.status == 403 && got.head.contains("approval_denied"),
        "{}",
        got.head
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_grant_dies_with_its_sandbox_and_with_its_rule() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let up = upstream(d).await;
    let port = up.addr.port();
    let r = replica_asking(d, port, "{ timeout: 30s }").await;
    let url = format!("https://unlisted.test:{port}/api/send");

    // gx of alice gets an `always` grant, then expires.
    let (cred, ca) = sandbox(&r, d, "gx", "alice", "3s").await;
    grant(&r, d, "gx", &cred, &ca, &url, "always").await;
    assert_eq!(grants(&r, d).await.len(), 1);
    let mut gone = false;
    for _ in 0..100 {
        if grants(&r, d).await.is_empty() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(gone, "the grant outlived its sandbox's expiry");
    // gx again, now bob's: his request is held, not granted.
    let (cred, ca) = sandbox(&r, d, "gx", "bob", "1h").await;
    held_then_denied(&r, d, "gx", &cred, &ca, &url, "x").await;

    // A grant holds only while its rule is as it was: a reload that edits the rule drops it.
    let (cred, ca) = sandbox(&r, d, "gy", "alice", "1h").await;
    grant(&r, d, "gy", &cred, &ca, &url, "always").await;
    assert_eq!(
        curl(&r, "gy", &cred, &ca, &url, Some("again"), &[])
            .await
            .unwrap()
            .status,
        200
    );
    let edited = r.yaml.replacen(
        &ask_rule(port, ""),
        &ask_rule(port, "        methods: [POST, PUT]\n"),
        1,
    );
    assert_ne!(edited, r.yaml);
    std::fs::write(&r.path, edited).unwrap();
    let (status, v) = admin(r.admin_port, &token(d), "POST", "/v1/reload", "").await;
    assert_eq!(status, 200, "{v}");
    assert!(grants(&r, d).await.is_empty(), "a grant outlived its rule");
    held_then_denied(&r, d, "gy", &cred, &ca, &url, "x").await;

    // And a revoked sandbox's grant is gone with it.
    grant(&r, d, "gy", &cred, &ca, &url, "always").await;
    let (status, _) = admin(r.admin_port, &token(d), "DELETE", "/v1/sandboxes/gy", "").await;
    assert_eq!(status, 200);
    assert!(grants(&r, d).await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn one_sandbox_or_one_user_cannot_fill_the_approval_queue() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let up = upstream(d).await;
    let port = up.addr.port();
    let bounds = "{ timeout: 30s, max_pending: 5, max_pending_per_sandbox: 2, max_pending_per_user: 3 }";
    let r = replica_asking(d, port, bounds).await;
    let url = format!("https://unlisted.test:{port}/api/send");
    let (c1, ca1) = sandbox(&r, d, "a1", "alice", "1h").await;
    let (c2, ca2) = sandbox(&r, d, "a2", "alice", "1h").await;
    let (c3, ca3) = sandbox(&r, d, "b1", "bob", "1h").await;

    let mut held = vec![
        curl(&r, "a1", &c1, &ca1, &url, Some("1"), &[]),
        curl(&r, "a1", &c1, &ca1, &url, Some("2"), &[]),
    ];
    pending(&r, d, 2).await;
    // The sandbox's third: 429, when to try again, and why.
    let third = curl(&r, "a1", &c1, &ca1, &url, Some("3"), &[]).await.unwrap();
    assert_eq!(third.status, 429, "{}", third.head);
    assert!(
        third.head.contains("x-cordon-reason: approval_sandbox_limit"),
        "{}",
        third.head
    );
    let retry: u64 = third
        .head
        .lines()
        .find_map(|l| l.strip_prefix("retry-after: "))
        .map(|v| v.trim().parse().unwrap())
        .expect("no Retry-After");
    assert!((1..=30).contains(&retry), "{retry}");
    // The same user's other sandbox: one more, then the user's cap.
    held.push(curl(&r, "a2", &c2, &ca2, &url, Some("4"), &[]));
    pending(&r, d, 3).await;
    let fourth = curl(&r, "a2", &c2, &ca2, &url, Some("5"), &[]).await.unwrap();
    assert_eq!(fourth.status, 429, "{}", fourth.head);
    assert!(
        fourth.head.contains("x-cordon-reason: approval_user_limit"),
        "{}",
        fourth.head
    );
    // Another user's sandbox is still heard.
    held.push(curl(&r, "b1", &c3, &ca3, &url, Some("6"), &[]));
    let list = pending(&r, d, 4).await;
    for p in &list {
        decide(&r, d, p["id"].as_str().unwrap(), "deny", "once").await;
    }
    for h in held {
        assert_eq!(h.await.unwrap().status, 403);
    }
    // The refusals are in the audit log with their reasons.
    // Records are written after the answers: wait for them, a while at most.
    for reason in ["approval_sandbox_limit", "approval_user_limit"] {
        crate::rigs::wait::until_async(&format!("an audit record of {reason}"), Duration::from_secs(10), || {
            std::fs::read_to_string(d.join("audit.jsonl"))
                .unwrap_or_default()
                .lines()
                .any(|l| l.contains(&format!("\"outcome\":\"{reason}\"")))
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_approver_sees_the_whole_request_escaped_and_exact_grants_no_more() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let up = upstream(d).await;
    let port = up.addr.port();
    let r = replica_asking(d, port, "{ timeout: 30s }").await;
    let (cred, ca) = sandbox(&r, d, "sx", "alice", "1h").await;
    // The query hides its destination behind a right-to-left override; the body pads what matters past any
    // excerpt; the sandbox's own token and a placeholder travel in headers.
    let url =
        format!("https://unlisted.test:{port}/api/send?to=attacker@evil.example&amount=99999&memo=\u{202e}lmth.exe");
    let body = format!("note=hello{}&also=transfer-all", " ".repeat(4000));
    let placeholder = "cordon-ph-0123456789abcdef0123456789abcdef";
    let headers = [
        "-H",
        "Authorization: Bearer sandbox-own-token",
        "-H",
        &format!("X-Note: {placeholder}"),
    ];
    let held = curl(&r, "sx", &cred, &ca, &url, Some(&body), &headers);
    let p = pending(&r, d, 1).await.remove(0);
    assert_eq!(p["method"], "POST");
    let shown = p["url"].as_str().unwrap();
    assert!(
        shown.starts_with(&format!(
            "https://unlisted.test:{port}/api/send?to=attacker@evil.example&amount=99999"
        )),
        "{shown}"
    );
    assert!(
        shown.ends_with("memo=\\u{202e}lmth.exe") && !shown.contains('\u{202e}'),
        "{shown}"
    );
    assert_eq!(p["body"]["length"], body.len());
    let sha = hex::encode(ring::digest::digest(&ring::digest::SHA256, body.as_bytes()));
    assert_eq!(p["body"]["sha256"], sha);
    assert!(p["excerpt"].as_str().unwrap().starts_with("note=hello"), "{p}");
    let header = |name: &str| {
        p["headers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["name"] == name)
            .map(|h| h["value"].as_str().unwrap().to_string())
    };
    assert_eq!(header("authorization").as_deref(), Some("[redacted: 24 bytes]"));
    assert_eq!(header("x-note").as_deref(), Some("cordon-ph-[redacted]"));
    let raw = serde_json::to_string(&p).unwrap();
    assert!(
        !raw.contains("sandbox-own-token") && !raw.contains(placeholder),
        "{raw}"
    );

    // The CLI shows the same, escaped.
    let out = std::process::Command::new(crate::rigs::process::BIN)
        .args([
            "approvals",
            "list",
            "--admin",
            &format!("http://127.0.0.1:{}", r.admin_port),
            "--token-file",
        ])
        .arg(d.join("admin-token"))
        .timed_output()
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{listed}");
    assert!(
        listed.contains("amount=99999") && listed.contains("\\u{202e}") && !listed.contains('\u{202e}'),
        "{listed}"
    );

    // `exact`: the very same request passes from now on; another query or another body asks again.
    decide(&r, d, p["id"].as_str().unwrap(), "allow", "exact").await;
    assert_eq!(held.await.unwrap().status, 200);
    let again = curl(&r, "sx", &cred, &ca, &url, Some(&body), &headers).await.unwrap();
    assert_eq!(again.status, 200, "{}", again.head);
    let g = grants(&r, d).await;
    assert_eq!(
        (g.len(), g[0]["reach"].as_str(), g[0]["body_sha256"].as_str()),
        (1, Some("exact"), Some(sha.as_str()))
    );
    let other_query = url.replace("amount=99999", "amount=100000");
    held_then_denied(&r, d, "sx", &cred, &ca, &other_query, &body).await;
    held_then_denied(&r, d, "sx", &cred, &ca, &url, &format!("{body}&more")).await;
}
