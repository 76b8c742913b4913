//! Sandboxes with their own policy through the admin API: created within a base (`extends`) and never past it,
//! changed with PATCH (tunnels it no longer allows closed, the CA re-issued when its names change), and held to a
//! base that a reload narrows.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::rigs::client::closed_within;
use crate::rigs::control::*;
use crate::rigs::tls::tls_as;

async fn call(rig: &ControlRig, method: &str, path: &str, body: &Value) -> (u16, Value) {
    let (status, _, text) = rig.raw(method, path, Some(&rig.token), &body.to_string()).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// The task policy: GET under /v1/ on api.allowed.test, allowed.test whole, and the pinned tunnel.
fn task(port: u16) -> Value {
    json!({
        "extends": "web",
        "allow": [
            {"host": "allowed.test", "ports": [port]},
            {"host": "api.allowed.test", "ports": [port], "methods": ["GET"], "paths": ["/v1/items/**"]},
            {"host": "pinned.test", "ports": [port], "tls": "tunnel"},
        ]
    })
}

/// `POST /v1/sandboxes` for alice with `policy`.
async fn post(rig: &ControlRig, policy: Value) -> (u16, Value) {
    call(
        rig,
        "POST",
        "/v1/sandboxes",
        &json!({"user": "alice", "policy": policy}),
    )
    .await
}

async fn create(rig: &ControlRig, policy: Value) -> (String, String, String) {
    let (status, v) = post(rig, policy).await;
    assert_eq!(status, 201, "{v}");
    let id = v["id"].as_str().unwrap().to_string();
    let credential = v["credential"].as_str().unwrap().to_string();
    let ca = v["ca_certificate"].as_str().unwrap().to_string();
    (id, credential, ca)
}

/// One request inside an intercepted session to `host` as `who`: its status.
async fn get_through(rig: &ControlRig, who: (&str, &str), host: &str, method: &str, path: &str, ca_pem: &str) -> u16 {
    let ca = rig.dir.path().join(format!("{}-{host}.pem", who.0));
    std::fs::write(&ca, ca_pem).unwrap();
    let target = format!("{host}:{}", rig.up.addr.port());
    let mut tls = tls_as(rig.proxy, who, &target, host, &ca, b"http/1.1").await.unwrap();
    let req = format!("{method} {path} HTTP/1.1\r\nHost: {target}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    tls.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = crate::rigs::wait::within(
        &format!("the answer to {method} {path} through {}", rig.proxy),
        std::time::Duration::from_secs(30),
        tls.read_to_end(&mut out),
    )
    .await;
    let text = String::from_utf8_lossy(&out);
    text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sandbox_with_its_own_policy_gets_only_what_it_names_within_its_base() {
    let rig = control_rig("").await;
    let port = rig.up.addr.port();
    let mut own = task(port);
    own["allow"].as_array_mut().unwrap().remove(0);
    let (id, cred, ca) = create(&rig, own.clone()).await;
    let who = (id.as_str(), cred.as_str());
    let (status, v) = call(&rig, "GET", &format!("/v1/sandboxes/{id}"), &Value::Null).await;
    assert_eq!(status, 200);
    assert_eq!(v["policy"], "web");
    assert_eq!(v["inline_policy"], own);
    // Allowed by its own rules.
    assert_eq!(
        get_through(&rig, who, "api.allowed.test", "GET", "/v1/items/1", &ca).await,
        200
    );
    assert_eq!(connect(&rig, who, "pinned.test").await.0.status, 200);
    // Allowed by the base, not by its own rules: refused, at CONNECT or per request.
    assert_eq!(connect(&rig, who, "allowed.test").await.0.status, 403);
    assert_eq!(
        get_through(&rig, who, "api.allowed.test", "GET", "/v1/other", &ca).await,
        403
    );
    assert_eq!(connect(&rig, who, "unlisted.test").await.0.status, 403);
    // The audit names its policy as its own, narrowing web.
    let r = rig
        .audit
        .wait_any(|r| r.sandbox.as_deref() == Some(id.as_str()) && r.path.as_deref() == Some("/v1/items/1"))
        .await
        .unwrap();
    assert_eq!(r.policy.as_deref(), Some("web+inline"));
    let r = rig
        .audit
        .wait_any(|r| r.sandbox.as_deref() == Some(id.as_str()) && r.host.as_deref() == Some("allowed.test"))
        .await
        .unwrap();
    assert_eq!(r.reason.as_deref(), Some("no_rule"));
    // A declared sandbox of the same base is untouched.
    assert_eq!(connect(&rig, ("sb1", "tok1"), "allowed.test").await.0.status, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn what_goes_past_the_base_is_422_naming_each_value_and_nothing_is_stored() {
    let rig = control_rig("").await;
    let port = rig.up.addr.port();
    let wider = json!({"extends": "web", "allow": [
        {"host": "unlisted.test", "ports": [port]},
        {"host": "api.allowed.test", "ports": [port], "methods": ["GET", "DELETE"], "paths": ["/v1/**"]},
        {"host": "api.allowed.test", "ports": [port], "methods": ["GET"], "paths": ["/admin/**"]},
        {"host": "allowed.test", "ports": [port, 8443]},
        {"host": "pinned.test", "ports": [port]},
        {"cidrs": ["127.0.0.0/24"], "ports": [port]},
    ]});
    let (status, v) = post(&rig, wider).await;
    assert_eq!(status, 422, "{v}");
    assert_eq!(v["error"]["code"], "exceeds_base");
    let paths: Vec<&str> = v["error"]["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "policy.allow[0].host",
            "policy.allow[1].methods",
            "policy.allow[2].paths",
            "policy.allow[3].ports",
            "policy.allow[4].tls",
            "policy.allow[5].cidrs"
        ]
    );
    assert!(v["error"]["message"].as_str().unwrap().contains("unlisted.test"), "{v}");
    // Invalid values get the file's messages at JSON paths.
    let (status, v) = post(
        &rig,
        json!({"extends": "web", "allow": [{"host": "allowed.test", "methods": ["GETT"]}]}),
    )
    .await;
    assert_eq!(status, 422, "{v}");
    assert_eq!(v["error"]["code"], "invalid");
    assert_eq!(v["error"]["details"][0]["path"], "policy.allow[0].methods[0]");
    assert!(
        v["error"]["details"][0]["message"]
            .as_str()
            .unwrap()
            .contains("did you mean GET")
    );
    for (policy, needle) in [
        (json!({"extends": "nothing"}), "policy.extends"),
        (json!({"allow": []}), "extends"),
        (json!({"extends": "web", "alow": []}), "policy.alow"),
        (json!(7), "policy:"),
        (json!("nothing"), "no policy \"nothing\""),
    ] {
        let (status, v) = post(&rig, policy).await;
        assert_eq!(status, 422, "{v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(needle),
            "{needle}: {v}"
        );
    }
    let (_, list) = call(&rig, "GET", "/v1/sandboxes", &Value::Null).await;
    assert!(
        list["sandboxes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["origin"] == "config"),
        "{list}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_patch_narrows_a_live_sandbox_closes_its_tunnel_and_reissues_its_ca() {
    let rig = control_rig("").await;
    let port = rig.up.addr.port();
    let (id, cred, old_ca) = create(&rig, task(port)).await;
    let who = (id.as_str(), cred.as_str());
    let (status, mut pinned) = connect(&rig, who, "pinned.test").await;
    assert_eq!(status.status, 200);
    let kept_ca = rig.dir.path().join("kept.pem");
    std::fs::write(&kept_ca, &old_ca).unwrap();
    let target = format!("allowed.test:{port}");
    let mut kept = tls_as(rig.proxy, who, &target, "allowed.test", &kept_ca, b"http/1.1")
        .await
        .unwrap();

    // Narrowed: no tunnel to pinned.test, no api.allowed.test (so the CA's names change).
    let narrow = json!({"extends": "web", "allow": [{"host": "allowed.test", "ports": [port]}]});
    let (status, v) = call(
        &rig,
        "PATCH",
        &format!("/v1/sandboxes/{id}"),
        &json!({"policy": narrow}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["ca_reissued"], true);
    assert_eq!(v["inline_policy"], narrow);
    let new_ca = v["ca_certificate"].as_str().unwrap().to_string();
    assert_ne!(new_ca, old_ca);
    assert!(
        closed_within(&mut pinned, Duration::from_secs(2)).await,
        "the tunnel outlived its rule"
    );
    // Recorded as a denial: the sandbox may no longer go there.
    let closed = rig
        .audit
        .wait_any(|r| r.host.as_deref() == Some("pinned.test") && r.sandbox.as_deref() == Some(id.as_str()))
        .await
        .unwrap();
    assert_eq!(
        (closed.reason.as_deref(), closed.decision),
        (Some("closed"), cordon::audit::Verdict::Deny)
    );
    let mut b = [0u8; 1];
    assert!(
        tokio::time::timeout(Duration::from_millis(300), kept.read(&mut b))
            .await
            .is_err(),
        "a session the new policy allows was closed"
    );
    // The same credential, the new rules, the new CA.
    assert_eq!(connect(&rig, who, "pinned.test").await.0.status, 403);
    assert_eq!(get_through(&rig, who, "allowed.test", "GET", "/x", &new_ca).await, 200);
    let stale = rig.dir.path().join("stale.pem");
    std::fs::write(&stale, &old_ca).unwrap();
    assert!(
        tls_as(rig.proxy, who, &target, "allowed.test", &stale, b"http/1.1")
            .await
            .is_err(),
        "the old CA still verifies"
    );

    // The same names again: the CA stays.
    let (status, v) = call(
        &rig,
        "PATCH",
        &format!("/v1/sandboxes/{id}"),
        &json!({"policy": narrow}),
    )
    .await;
    assert_eq!((status, &v["ca_reissued"]), (200, &json!(false)), "{v}");
    assert_eq!(v["ca_certificate"], json!(new_ca));
    // Past the base: refused, and nothing changes.
    let wider = json!({"extends": "web", "allow": [{"host": "unlisted.test", "ports": [port]}]});
    let (status, v) = call(&rig, "PATCH", &format!("/v1/sandboxes/{id}"), &json!({"policy": wider})).await;
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (422, Some("exceeds_base")),
        "{v}"
    );
    let (_, shown) = call(&rig, "GET", &format!("/v1/sandboxes/{id}"), &Value::Null).await;
    assert_eq!(shown["inline_policy"], narrow);
    // Back to the base itself, by name.
    let (status, v) = call(&rig, "PATCH", &format!("/v1/sandboxes/{id}"), &json!({"policy": "web"})).await;
    assert_eq!((status, &v["inline_policy"]), (200, &Value::Null), "{v}");
    assert_eq!(connect(&rig, who, "pinned.test").await.0.status, 200);

    // Only live run-time sandboxes, and only `policy`.
    let (status, v) = call(&rig, "PATCH", "/v1/sandboxes/sb1", &json!({"policy": "web"})).await;
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (409, Some("declared_in_config")),
        "{v}"
    );
    let (status, _) = call(&rig, "PATCH", "/v1/sandboxes/nobody", &json!({"policy": "web"})).await;
    assert_eq!(status, 404);
    let (status, v) = call(
        &rig,
        "PATCH",
        &format!("/v1/sandboxes/{id}"),
        &json!({"user": "mallory"}),
    )
    .await;
    assert_eq!(status, 422, "{v}");
    let (status, _) = call(&rig, "DELETE", &format!("/v1/sandboxes/{id}"), &Value::Null).await;
    assert_eq!(status, 200);
    let (status, _) = call(&rig, "PATCH", &format!("/v1/sandboxes/{id}"), &json!({"policy": "web"})).await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reload_that_narrows_the_base_refuses_a_sandbox_whose_policy_no_longer_fits() {
    let rig = control_rig("").await;
    let port = rig.up.addr.port();
    let (id, cred, _) = create(&rig, task(port)).await;
    let who = (id.as_str(), cred.as_str());
    let (status, mut tunnel) = connect(&rig, who, "allowed.test").await;
    assert_eq!(status.status, 200);
    let narrowed = rig.yaml.replace(
        &format!("      - host: pinned.test\n        ports: [{port}]\n        tls: tunnel\n"),
        "",
    );
    assert_ne!(narrowed, rig.yaml);
    rig.write(&narrowed);
    let (status, _, body) = rig.raw("POST", "/v1/reload", Some(&rig.token), "").await;
    assert_eq!(status, 200, "{body}");
    // Its own policy names pinned.test, which web no longer allows: nothing of it holds (its tunnels close, every
    // request is refused) until the base allows it again or a PATCH fits it in.
    assert!(closed_within(&mut tunnel, Duration::from_secs(2)).await);
    assert_eq!(connect(&rig, who, "allowed.test").await.0.status, 403);
    // The base restored: it works again, with the same credential.
    rig.write(&rig.yaml);
    let (status, _, body) = rig.raw("POST", "/v1/reload", Some(&rig.token), "").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(connect(&rig, who, "allowed.test").await.0.status, 200);
}
