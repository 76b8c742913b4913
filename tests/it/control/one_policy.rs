//! One policy per request, through the binary: the policy that decided a request is the one its later steps
//! (the approver's view of the rule, the credentials applied) use, even when the sandbox's own policy is
//! PATCHed while the request waits between them.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::rigs::control::{admin, token};
use crate::rigs::replicas::{replica_with, upstream};
use crate::rigs::tls::tls_as;

/// The base `web` with two credentials for unlisted.test, and an ask rule for it under /api/.
fn base(yaml: String, d: &Path, up: u16) -> String {
    assert!(yaml.contains("  web:\n    allow:\n"), "the rig's configuration changed");
    let credentials = format!(
        "credentials:\n  one:\n    source: {{ file: {d}/one }}\n    bind: {{ hosts: [unlisted.test], ports: [{up}] }}\n    \
         inject: {{ header: X-One, value: \"{{secret}}\" }}\n  two:\n    source: {{ file: {d}/two }}\n    bind: \
         {{ hosts: [unlisted.test], ports: [{up}] }}\n    inject: {{ header: X-Two, value: \"{{secret}}\" }}\n",
        d = d.display()
    );
    yaml.replacen(
        "  web:\n    allow:\n",
        &format!(
            "  web:\n    credentials: [one, two]\n    allow:\n      - host: unlisted.test\n        ports: [{up}]\n        \
             paths: [\"/api/**\"]\n        action: ask\n"
        ),
        1,
    ) + &credentials
}

/// Read from `tls` until `want` has been seen (or the stream ends); everything read.
async fn read_until(tls: &mut (impl AsyncReadExt + Unpin), want: &str) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains(want) {
        let n = tokio::time::timeout(Duration::from_secs(20), tls.read(&mut buf))
            .await
            .expect("cordon went quiet")
            .unwrap();
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_patch_while_a_request_waits_leaves_it_with_the_policy_that_decided_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("one"), "secret-of-one").unwrap();
    std::fs::write(d.join("two"), "secret-of-two").unwrap();
    let up = upstream(d).await;
    let port = up.addr.port();
    let extra = format!(
        "approval: {{ timeout: 30s }}\naudit: {{ path: {}/audit.jsonl }}\n",
        d.display()
    );
    let r = replica_with(d, "onepol", port, true, &extra, |yaml| base(yaml, d, port)).await;
    let tok = token(d);

    // Policy A asks about POST /api/** with its rule 2 and applies credential one.
    let a = json!({"extends": "web", "credentials": ["one"], "allow": [
        {"host": "allowed.test", "ports": [port]},
        {"host": "unlisted.test", "ports": [port], "methods": ["GET"], "paths": ["/api/public/**"], "action": "ask"},
        {"host": "unlisted.test", "ports": [port], "methods": ["POST"], "paths": ["/api/**"], "action": "ask"},
    ]});
    let (status, v) = admin(
        r.admin_port,
        &tok,
        "POST",
        "/v1/sandboxes",
        &json!({"id": "agent", "user": "alice", "policy": a}).to_string(),
    )
    .await;
    assert_eq!(status, 201, "{v}");
    let cred = v["credential"].as_str().unwrap().to_string();
    let ca = d.join("agent.pem");
    std::fs::write(&ca, v["ca_certificate"].as_str().unwrap()).unwrap();

    // The request is decided under A when its head arrives; cordon asks for the body (100 Continue) to show it
    // to the approver, and only then would look at the rule and the credentials.
    let target = format!("unlisted.test:{port}");
    let mut tls = tls_as(
        std::net::SocketAddr::from(([127, 0, 0, 1], r.proxy)),
        ("agent", &cred),
        &target,
        "unlisted.test",
        &ca,
        b"http/1.1",
    )
    .await
    .unwrap();
    let head = format!(
        "POST /api/pay HTTP/1.1\r\nHost: {target}\r\nContent-Length: 4\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"
    );
    tls.write_all(head.as_bytes()).await.unwrap();
    let continued = read_until(&mut tls, "\r\n\r\n").await;
    assert!(continued.starts_with("HTTP/1.1 100"), "{continued}");

    // Meanwhile the sandbox's policy becomes B: one rule (so A's rule 2 is not B's), credential two.
    let b = json!({"extends": "web", "credentials": ["two"], "allow": [
        {"host": "unlisted.test", "ports": [port], "paths": ["/api/**"], "action": "ask"},
    ]});
    let (status, v) = admin(
        r.admin_port,
        &tok,
        "PATCH",
        "/v1/sandboxes/agent",
        &json!({"policy": b}).to_string(),
    )
    .await;
    assert_eq!(status, 200, "{v}");

    tls.write_all(b"paid").await.unwrap();
    let mut asked: Option<Value> = None;
    for _ in 0..200 {
        let (_, v) = admin(r.admin_port, &tok, "GET", "/v1/approvals", "").await;
        if let Some(first) = v["pending"].as_array().and_then(|l| l.first()) {
            asked = Some(first.clone());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let asked = asked.expect("the request never waited for approval (refused, or answered 500?)");
    // The approver is shown the rule that decided: A's rule 2.
    assert_eq!(asked["rule"], 2, "{asked}");
    let id = asked["id"].as_str().unwrap();
    let (status, v) = admin(
        r.admin_port,
        &tok,
        "POST",
        &format!("/v1/approvals/{id}"),
        r#"{"decision": "allow"}"#,
    )
    .await;
    assert_eq!(status, 200, "{v}");
    let answer = read_until(&mut tls, "\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    // It went with A's credential, not B's.
    let seen = up.seen();
    let paid = seen
        .iter()
        .find(|s| s.uri.ends_with("/api/pay"))
        .expect("never reached the upstream");
    assert_eq!(paid.header("x-one"), Some("secret-of-one"), "{:?}", paid.headers);
    assert_eq!(paid.header("x-two"), None, "{:?}", paid.headers);
    assert_eq!(paid.body, b"paid");
}
