//! Human approval end to end: a rule with `action: ask`, a real webhook receiver that checks the signature,
//! and decisions through the admin API: allow once, deny, always (the next request passes without asking),
//! and timeout.

use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

use crate::rigs::control::*;
use crate::rigs::tls::{read_tls_response, tls_as};
use crate::rigs::webhook::{SECRET, receiver};

async fn rig_with_hook(timeout: &str) -> (ControlRig, mpsc::UnboundedReceiver<(String, Value)>) {
    let (hook, rx) = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("hook-secret");
    std::fs::write(&secret, SECRET).unwrap();
    let approval = format!(
        "approval:\n  timeout: {timeout}\n  webhook: {{ url: \"http://127.0.0.1:{hook}/hook\", secret: {{ file: {} }} }}\n",
        secret.display()
    );
    let rig = control_rig_edit(&approval, |yaml, port| {
        yaml.replace(
            "  web:\n    allow:\n",
            &format!(
                "  web:\n    allow:\n      - host: allowed.test\n        ports: [{port}]\n        methods: [POST]\n        paths: [\"/ask/**\"]\n        action: ask\n"
            ),
        )
    })
    .await;
    std::mem::forget(dir);
    (rig, rx)
}

/// POST `path` with `body` through a fresh intercepted tunnel as sb1; the response text (head and body).
fn post(rig: &ControlRig, path: &'static str, body: &'static str) -> tokio::task::JoinHandle<String> {
    let (proxy, port) = (rig.proxy, rig.up.addr.port());
    let ca = rig.dir.path().join("sb1.pem");
    tokio::spawn(async move {
        let target = format!("allowed.test:{port}");
        let mut tls = tls_as(proxy, ("sb1", "tok1"), &target, "allowed.test", &ca, b"http/1.1")
            .await
            .unwrap();
        let req = format!(
            "POST {path} HTTP/1.1\r\nHost: {target}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        tls.write_all(req.as_bytes()).await.unwrap();
        read_tls_response(&mut tls).await
    })
}

/// The next `approval.requested` event.
async fn requested(rx: &mut mpsc::UnboundedReceiver<(String, Value)>) -> Value {
    loop {
        let (event, v) = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .unwrap()
            .unwrap();
        if event == "approval.requested" {
            return v;
        }
    }
}

async fn decide(rig: &ControlRig, id: &str, body: &str) -> (u16, Value) {
    let (status, _, text) = rig
        .raw("POST", &format!("/v1/approvals/{id}"), Some(&rig.token), body)
        .await;
    (status, serde_json::from_str(&text).unwrap())
}

async fn write_ca(rig: &ControlRig) {
    rig.ca_file("sb1").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn allow_once_then_deny_each_by_a_human() {
    let (rig, mut hook) = rig_with_hook("30s").await;
    write_ca(&rig).await;
    let held = post(&rig, "/ask/payments", r#"{"amount": 5, "to": "acme"}"#);
    let event = requested(&mut hook).await;
    let a = &event["approval"];
    assert_eq!(
        (a["sandbox"].as_str(), a["user"].as_str()),
        (Some("sb1"), Some("alice"))
    );
    assert_eq!(
        (a["method"].as_str(), a["path"].as_str()),
        (Some("POST"), Some("/ask/payments"))
    );
    assert!(a["excerpt"].as_str().unwrap().contains("\"amount\": 5"), "{a}");
    let id = a["id"].as_str().unwrap().to_string();
    // Visible through the API while it waits, and nothing reached the upstream yet.
    let (_, _, pending) = rig.raw("GET", "/v1/approvals", Some(&rig.token), "").await;
    assert!(pending.contains(&id));
    // And counted in the metrics (updated every 250 ms).
    let mut counted = false;
    for _ in 0..20 {
        let (_, _, m) = rig.raw("GET", "/metrics", None, "").await;
        if m.lines().any(|l| l == "cordon_approvals_pending 1") {
            counted = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(counted, "cordon_approvals_pending never said 1");
    assert!(!rig.up.seen().iter().any(|s| s.uri.ends_with("/ask/payments")));
    let (status, v) = decide(&rig, &id, r#"{"decision": "allow"}"#).await;
    assert_eq!(status, 200, "{v}");
    let answer = held.await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(rig.up.seen().iter().any(|s| s.uri.ends_with("/ask/payments")));
    let record = rig.audit.wait_any(|r| r.approval.is_some()).await.unwrap();
    let ap = record.approval.unwrap();
    assert_eq!(
        (ap.outcome.as_str(), ap.by.as_deref(), ap.scope.as_deref()),
        ("allow", Some("admin"), Some("once"))
    );

    // Once means once: the same request asks again; this time it is denied.
    let held = post(&rig, "/ask/payments", r#"{"amount": 5, "to": "acme"}"#);
    let id = requested(&mut hook).await["approval"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(decide(&rig, &id, r#"{"decision": "deny"}"#).await.0, 200);
    let answer = held.await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(answer.contains("approval_denied"));
    // A decision on something no longer pending is a 404; a bad one a 422.
    assert_eq!(decide(&rig, &id, r#"{"decision": "allow"}"#).await.0, 404);
    assert_eq!(
        decide(&rig, "ap-0000000000000000", r#"{"decision": "maybe"}"#).await.0,
        422
    );
    // Requests the rule does not ask about go straight through.
    let quick = post(&rig, "/plain", "{}").await.unwrap();
    assert!(quick.starts_with("HTTP/1.1 200"));
}

#[tokio::test(flavor = "multi_thread")]
async fn always_grants_the_same_request_until_the_grant_is_removed() {
    let (rig, mut hook) = rig_with_hook("30s").await;
    write_ca(&rig).await;
    let held = post(&rig, "/ask/deploy", "ship it");
    let id = requested(&mut hook).await["approval"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        decide(&rig, &id, r#"{"decision": "allow", "scope": "always"}"#).await.0,
        200
    );
    assert!(held.await.unwrap().starts_with("HTTP/1.1 200"));
    // The second identical request passes without asking anyone.
    let again = tokio::time::timeout(Duration::from_secs(5), post(&rig, "/ask/deploy", "ship it again"))
        .await
        .expect("the granted request was held")
        .unwrap();
    assert!(again.starts_with("HTTP/1.1 200"), "{again}");
    assert!(
        rig.audit
            .wait_any(|r| r.approval.as_ref().is_some_and(|a| a.outcome == "granted"))
            .await
            .is_some()
    );
    let (_, _, grants) = rig.raw("GET", "/v1/grants", Some(&rig.token), "").await;
    let grants: Value = serde_json::from_str(&grants).unwrap();
    let grant = grants["grants"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(grants["grants"][0]["path"], "/ask/deploy");
    // Removed: the request asks again.
    assert_eq!(
        rig.raw("DELETE", &format!("/v1/grants/{grant}"), Some(&rig.token), "")
            .await
            .0,
        200
    );
    let held = post(&rig, "/ask/deploy", "once more");
    let id = requested(&mut hook).await["approval"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(decide(&rig, &id, r#"{"decision": "deny"}"#).await.0, 200);
    assert!(held.await.unwrap().starts_with("HTTP/1.1 403"));
}

#[tokio::test(flavor = "multi_thread")]
async fn nobody_deciding_is_a_403_that_says_the_approval_timed_out() {
    let (rig, mut hook) = rig_with_hook("1s").await;
    write_ca(&rig).await;
    let held = post(&rig, "/ask/delete-everything", "");
    let _ = requested(&mut hook).await;
    let answer = tokio::time::timeout(Duration::from_secs(5), held)
        .await
        .unwrap()
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(answer.contains("approval timed out"), "{answer}");
    assert!(!rig.up.seen().iter().any(|s| s.uri.contains("delete-everything")));
    assert!(
        rig.audit
            .wait_any(|r| r.approval.as_ref().is_some_and(|a| a.outcome == "timeout"))
            .await
            .is_some()
    );
}
