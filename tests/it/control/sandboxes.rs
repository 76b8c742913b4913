//! The control plane end to end: sandboxes created, used with the environment they were given (curl),
//! revoked and expired with their open tunnels closed, reloads valid and not, metrics, and the admin
//! API's refusals.

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::rigs::client::{auth, closed_within};
use crate::rigs::control::*;
use crate::rigs::tls::read_tls_response;
use crate::rigs::wait::Within;

fn s(v: &Value, k: &str) -> String {
    v[k].as_str().unwrap_or_else(|| panic!("no {k} in {v}")).to_string()
}

/// Write the sandbox's CA where its environment says, and run curl with exactly that environment.
fn curl_with_env(rig: &ControlRig, created: &Value, url: &str) -> std::process::Output {
    std::fs::write(rig.dir.path().join("sandbox-ca.pem"), s(created, "ca_certificate")).unwrap();
    let mut c = crate::rigs::process::curl();
    c.env_clear();
    for (k, v) in created["env"].as_object().unwrap() {
        c.env(k, v.as_str().unwrap());
    }
    c.args(["-sS", "--max-time", "10", url]).timed_output().unwrap()
}

/// CONNECT with a sandbox's credential; the status.
async fn connect_status(rig: &ControlRig, id: &str, credential: &str, host: &str) -> u16 {
    connect(rig, (id, credential), host).await.0.status
}

/// An intercepted tunnel with one request answered on it.
async fn open_tunnel(rig: &ControlRig, id: &str, credential: &str) -> tokio_rustls::client::TlsStream<TcpStream> {
    let target = format!("allowed.test:{}", rig.up.addr.port());
    let mut tls = rig.tls((id, credential)).await;
    tls.write_all(format!("GET /hello HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    assert!(read_tls_response(&mut tls).await.starts_with("HTTP/1.1 200"));
    tls
}

#[tokio::test(flavor = "multi_thread")]
async fn create_use_with_the_env_then_revoke_closes_the_open_tunnel() {
    let rig = control_rig("").await;
    let created = rig.create("web", "10m").await;
    let (id, cred) = (s(&created, "id"), s(&created, "credential"));
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "http_proxy",
        "https_proxy",
        "NO_PROXY",
        "SSL_CERT_FILE",
        "REQUESTS_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
        "NODE_USE_ENV_PROXY",
        "GIT_SSL_CAINFO",
        "PIP_CERT",
        "CARGO_HTTP_CAINFO",
        "CURL_CA_BUNDLE",
    ] {
        assert!(created["env"][var].is_string(), "env lacks {var}: {created}");
    }
    assert_eq!(created["labels"]["task"], "t-1");
    // A real client, started with nothing but the environment cordon handed out.
    let out = curl_with_env(&rig, &created, &url(&rig, "allowed.test", "/hello"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(rig.up.seen().last().unwrap().uri.ends_with("/hello"));
    // Still inside its policy: unlisted hosts are refused.
    assert_eq!(connect_status(&rig, &id, &cred, "unlisted.test").await, 403);

    let mut tunnel = open_tunnel(&rig, &id, &cred).await;
    assert_eq!(rig.client.show(&id).await.unwrap()["open_tunnels"], 1);
    let revoked = rig.client.revoke(&id).await.unwrap();
    assert!(revoked["revoked_at"].is_string());
    assert!(
        closed_within(&mut tunnel, Duration::from_secs(1)).await,
        "the open tunnel outlived the revocation"
    );
    assert_eq!(connect_status(&rig, &id, &cred, "allowed.test").await, 407);
    let out = curl_with_env(&rig, &created, &url(&rig, "allowed.test", "/again"));
    assert!(!out.status.success());
    assert!(
        rig.audit
            .wait_any(|r| r.reason.as_deref() == Some("auth_revoked"))
            .await
            .is_some()
    );
    // The id is gone from the API's point of view too.
    assert!(rig.client.credentials(&id).await.is_err());
}

#[tokio::test(flavor = "multi_thread")]
async fn expiry_closes_the_tunnel_on_its_own_and_renewal_holds_it_off() {
    let rig = control_rig("").await;
    let short = rig.create("web", "2s").await;
    let kept = rig.create("web", "2s").await;
    let (sid, scred) = (s(&short, "id"), s(&short, "credential"));
    let (kid, kcred) = (s(&kept, "id"), s(&kept, "credential"));
    rig.client.renew(&kid, Some("1h")).await.unwrap();
    let mut tunnel = open_tunnel(&rig, &sid, &scred).await;
    assert!(
        closed_within(&mut tunnel, Duration::from_secs(4)).await,
        "the tunnel outlived the sandbox"
    );
    assert_eq!(connect_status(&rig, &sid, &scred, "allowed.test").await, 407);
    assert!(
        rig.audit
            .wait_any(|r| r.reason.as_deref() == Some("auth_expired"))
            .await
            .is_some()
    );
    // The renewed one, with the credential handed out before the renewal, carries on past its first expiry.
    // (An idle tunnel is not kept open to show it: `timeouts.request_headers` is 2s in the test config.)
    assert_eq!(connect_status(&rig, &kid, &kcred, "allowed.test").await, 200);
    let _fresh = open_tunnel(&rig, &kid, &kcred).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn credentials_are_bound_to_their_sandbox() {
    let rig = control_rig("").await;
    let a = rig.create("web", "10m").await;
    let b = rig.create("web", "10m").await;
    // SECURITY: a's credential does not open b, nor a declared sandbox.
    assert_eq!(
        connect_status(&rig, &s(&b, "id"), &s(&a, "credential"), "allowed.test").await,
        407
    );
    assert_eq!(
        connect_status(&rig, "sb1", &s(&a, "credential"), "allowed.test").await,
        407
    );
    // Tamper with the signature in its middle (the last base64 character carries unused bits).
    let mut forged: Vec<char> = s(&a, "credential").chars().collect();
    let i = forged.len() - 10;
    forged[i] = if forged[i] == 'A' { 'B' } else { 'A' };
    let forged: String = forged.into_iter().collect();
    assert_eq!(connect_status(&rig, &s(&a, "id"), &forged, "allowed.test").await, 407);
    // A declared id cannot be created at run time.
    let (status, _, body) = rig
        .raw(
            "POST",
            "/v1/sandboxes",
            Some(&rig.token),
            r#"{"user":"x","policy":"web","id":"sb1"}"#,
        )
        .await;
    assert_eq!(status, 409, "{body}");
    // A further credential works alongside the first.
    let again = rig.client.credentials(&s(&a, "id")).await.unwrap();
    assert_ne!(again["credential"], a["credential"]);
    assert_eq!(
        connect_status(&rig, &s(&a, "id"), &s(&again, "credential"), "allowed.test").await,
        200
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_admin_api_refuses_what_it_should_with_json_errors() {
    let rig = control_rig("").await;
    let (status, head, body) = rig.raw("GET", "/v1/sandboxes", None, "").await;
    assert_eq!(status, 401, "{body}");
    assert!(head.to_ascii_lowercase().contains("www-authenticate: bearer"));
    let (status, _, body) = rig.raw("GET", "/v1/sandboxes", Some("wrong"), "").await;
    assert_eq!(status, 401);
    let err: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(err["error"]["code"], "unauthorized");
    let (status, _, _) = rig.raw("GET", "/healthz", None, "").await;
    assert_eq!(status, 200);
    let (status, _, body) = rig.raw("GET", "/readyz", None, "").await;
    assert_eq!(status, 200, "{body}");
    let t = Some(rig.token.as_str());
    for (body, field) in [
        (r#"{"policy":"web"}"#, "user"),
        (r#"{"user":"a","policy":"nope"}"#, "policy"),
        (r#"{"user":"a","policy":"web","ttl":"3h"}"#, "ttl"),
        (r#"{"user":"a","policy":"web","ttl":"soon"}"#, "ttl"),
        (r#"{"user":"a","policy":"web","id":"a b"}"#, "id"),
        (r#"{"user":"a","policy":"web","colour":"red"}"#, "colour"),
    ] {
        let (status, _, answer) = rig.raw("POST", "/v1/sandboxes", t, body).await;
        assert_eq!(status, 422, "{body} -> {answer}");
        let v: Value = serde_json::from_str(&answer).unwrap();
        assert!(v["error"]["message"].as_str().unwrap().contains(field), "{answer}");
    }
    let (status, _, _) = rig.raw("POST", "/v1/sandboxes", t, "{not json").await;
    assert_eq!(status, 400);
    let (status, _, _) = rig.raw("GET", "/v1/sandboxes/nobody", t, "").await;
    assert_eq!(status, 404);
    let (status, _, _) = rig.raw("DELETE", "/v1/sandboxes/sb1", t, "").await;
    assert_eq!(status, 409, "a declared sandbox is changed in the file");
    let (status, head, _) = rig.raw("PUT", "/v1/sandboxes", t, "").await;
    assert_eq!(status, 405);
    assert!(head.to_ascii_lowercase().contains("allow: get, post"));
    // Nothing was created by any of that.
    let list = rig.client.list().await.unwrap();
    assert!(
        list["sandboxes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v["origin"] == "config")
    );
    // SECURITY: the admin API is never served on the proxy port.
    let mut st = TcpStream::connect(rig.proxy).await.unwrap();
    st.write_all(
        format!(
            "GET /v1/sandboxes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\r\n",
            rig.token
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let resp = crate::rigs::client::read_response(&mut st).await.unwrap();
    assert_eq!(resp.status, 400);
    assert!(!resp.text().contains("sandboxes\""));
    // SECURITY: nor reachable *through* the proxy: even a report-mode sandbox (sb2, which may go anywhere)
    // with loopback opened by allow_cidrs is refused the admin listener's address, plain or by CONNECT.
    let admin = rig.admin;
    let mut st = TcpStream::connect(rig.proxy).await.unwrap();
    let raw = format!(
        "GET http://{admin}/v1/sandboxes HTTP/1.1\r\nHost: {admin}\r\n{}Authorization: Bearer {}\r\n\r\n",
        auth("sb2", "tok2"),
        rig.token
    );
    st.write_all(raw.as_bytes()).await.unwrap();
    let resp = crate::rigs::client::read_response(&mut st).await.unwrap();
    assert_eq!(
        (resp.status, resp.header("x-cordon-reason")),
        (403, Some("self_address"))
    );
    let mut st = TcpStream::connect(rig.proxy).await.unwrap();
    let raw = format!(
        "CONNECT {admin} HTTP/1.1\r\nHost: {admin}\r\n{}\r\n",
        auth("sb2", "tok2")
    );
    st.write_all(raw.as_bytes()).await.unwrap();
    let head = crate::rigs::client::read_head(&mut st).await;
    assert_eq!(
        (head.status, head.header("x-cordon-reason")),
        (403, Some("self_address"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_revoked_sandbox_loses_its_keep_alive_connection_and_requests_inside_its_tunnel() {
    let rig = control_rig("").await;
    let created = rig.create("web", "10m").await;
    let (id, cred) = (s(&created, "id"), s(&created, "credential"));
    // A plain keep-alive connection that has served the sandbox (the upstream speaks TLS only: 502, kept alive).
    let mut plain = TcpStream::connect(rig.proxy).await.unwrap();
    let req = format!(
        "GET http://allowed.test:{}/ HTTP/1.1\r\nHost: allowed.test\r\n{}\r\n",
        rig.up.addr.port(),
        auth(&id, &cred)
    );
    plain.write_all(req.as_bytes()).await.unwrap();
    let first = crate::rigs::client::read_response(&mut plain).await.unwrap();
    assert_ne!(first.status, 407);
    let mut tunnel = open_tunnel(&rig, &id, &cred).await;

    // Revoked behind the API's back (as another replica would): the sweep has not run yet, but a request
    // inside the open tunnel is judged again and refused, or finds the tunnel already closed.
    let sandbox = rig.state.control.verify(&id, &cred, cordon::control::now()).unwrap();
    rig.state.control.revoke(&id, cordon::control::now()).unwrap();
    let generation = rig.state.current();
    assert!(rig.state.entitled(&generation, &sandbox).is_err());
    let target = format!("allowed.test:{}", rig.up.addr.port());
    let wrote = tunnel
        .write_all(format!("GET /after HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes())
        .await;
    if wrote.is_ok() {
        let mut buf = vec![0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(2), tunnel.read(&mut buf))
            .await
            .unwrap()
            .unwrap_or(0);
        let answer = String::from_utf8_lossy(&buf[..n]);
        assert!(n == 0 || answer.starts_with("HTTP/1.1 407"), "{answer}");
    }
    assert!(
        !rig.up.seen().iter().any(|s| s.uri.ends_with("/after")),
        "a request of a revoked sandbox went out"
    );
    assert!(closed_within(&mut tunnel, Duration::from_secs(1)).await);
    assert!(
        closed_within(&mut plain, Duration::from_secs(1)).await,
        "the keep-alive connection outlived the revocation"
    );
}
