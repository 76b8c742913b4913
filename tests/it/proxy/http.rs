//! Plain HTTP through the explicit proxy: allow and deny by host, port, method and path; headers; audit.

use crate::rigs::client::*;
use crate::rigs::proxy::*;
use cordon::audit::{Kind, Verdict};

fn get(target: &str, extra: &str) -> String {
    format!(
        "GET {target} HTTP/1.1\r\nHost: ignored.example\r\n{}{extra}Connection: close\r\n\r\n",
        auth("sb1", "tok1")
    )
}

#[tokio::test]
async fn allowed_request_is_forwarded_cleanly_and_audited() {
    let (up, _echo, p) = rig().await;
    let port = up.addr.port();
    let raw = format!(
        "GET http://allowed.test:{port}/hello?token=s3cret HTTP/1.1\r\nHost: evil.example\r\n{}\
         Proxy-Connection: keep-alive\r\nConnection: close, X-Hop\r\nX-Hop: 1\r\nX-Cordon-Sandbox: admin\r\nKeep-Alive: 5\r\n\r\n",
        auth("sb1", "tok1")
    );
    let resp = send(p.addr, &raw).await;
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(resp.text(), "hello from upstream\n");
    assert_eq!(resp.header("x-upstream"), Some("1"));
    assert_eq!(
        resp.header("proxy-authenticate"),
        None,
        "upstream Proxy-Authenticate must be stripped"
    );

    let seen = up.seen();
    assert_eq!(seen.len(), 1);
    let s = &seen[0];
    assert_eq!(s.method, "GET");
    assert_eq!(s.uri, "/hello?token=s3cret", "origin-form upstream");
    assert_eq!(
        s.header("host"),
        Some(format!("allowed.test:{port}").as_str()),
        "Host rewritten to the target"
    );
    for h in [
        "proxy-authorization",
        "proxy-connection",
        "x-hop",
        "x-cordon-sandbox",
        "keep-alive",
    ] {
        assert_eq!(s.header(h), None, "{h} must not reach upstream");
    }

    let recs = p.audit.wait_for(1).await;
    let r = &recs[0];
    assert_eq!(r.kind, Kind::Http);
    assert_eq!(r.sandbox.as_deref(), Some("sb1"));
    assert_eq!(r.user.as_deref(), Some("alice"));
    assert!(r.client.starts_with("127.0.0.1:"));
    assert_eq!(r.method.as_deref(), Some("GET"));
    assert_eq!(r.host.as_deref(), Some("allowed.test"));
    assert_eq!(r.port, Some(port));
    assert_eq!(r.path.as_deref(), Some("/hello"), "no query string in audit");
    assert_eq!(r.decision, Verdict::Allow);
    assert_eq!(r.policy.as_deref(), Some("web"));
    assert_eq!(r.rule, Some(0));
    assert_eq!(r.dialled.as_deref(), Some(up.addr.to_string().as_str()));
    assert_eq!(r.status, Some(200));
    assert_eq!(r.bytes_down, 20);
    assert!(r.duration_ms >= 0.0);
    let json = serde_json::to_string(r).unwrap();
    assert!(
        !json.contains("s3cret") && !json.contains("tok1"),
        "no query or token in audit: {json}"
    );
}

#[tokio::test]
async fn request_body_streams_and_is_counted() {
    let (up, _e, p) = rig().await;
    let body = "x".repeat(5000);
    let raw = format!(
        "POST http://allowed.test:{}/upload HTTP/1.1\r\nHost: allowed.test\r\n{}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        up.addr.port(),
        auth("sb1", "tok1"),
        body.len()
    );
    assert_eq!(send(p.addr, &raw).await.status, 200);
    assert_eq!(up.seen()[0].body.len(), 5000);
    assert_eq!(p.audit.wait_for(1).await[0].bytes_up, 5000);
}

#[tokio::test]
async fn large_response_streams_whole() {
    let (up, _e, p) = rig().await;
    let resp = send(p.addr, &get(&format!("http://allowed.test:{}/big", up.addr.port()), "")).await;
    assert_eq!(resp.body.len(), 100_000);
    assert_eq!(p.audit.wait_for(1).await[0].bytes_down, 100_000);
}

#[tokio::test]
async fn denials_by_host_port_method_path_open_no_connection() {
    let (up, _e, p) = rig().await;
    let port = up.addr.port();
    let cases = [
        (format!("GET http://unlisted.test:{port}/ HTTP/1.1"), "no_rule"),
        ("GET http://allowed.test:81/ HTTP/1.1".to_string(), "port_not_allowed"),
        (
            format!("POST http://api.allowed.test:{port}/v1/x HTTP/1.1"),
            "method_not_allowed",
        ),
        (
            format!("GET http://api.allowed.test:{port}/v2/x HTTP/1.1"),
            "path_not_allowed",
        ),
        // SECURITY: `*.allowed.test` never matches the bare suffix.
        (format!("GET http://allowedxtest:{port}/v1/x HTTP/1.1"), "no_rule"),
    ];
    for (line, reason) in &cases {
        let raw = format!(
            "{line}\r\nHost: x\r\n{}Content-Length: 0\r\nConnection: close\r\n\r\n",
            auth("sb1", "tok1")
        );
        let resp = send(p.addr, &raw).await;
        assert_eq!(resp.status, 403, "{line}: {}", resp.text());
        assert_eq!(resp.header("x-cordon-reason"), Some(*reason), "{line}");
        assert!(resp.text().starts_with("cordon: denied"), "{}", resp.text());
    }
    // The allowed path on the wildcard rule works.
    let ok = send(p.addr, &get(&format!("http://api.allowed.test:{port}/v1/x"), "")).await;
    assert_eq!(ok.status, 200);
    assert_eq!(up.accepted(), 1, "only the allowed request reached the upstream");
    let recs = p.audit.wait_for(cases.len() + 1).await;
    let denies: Vec<_> = recs.iter().filter(|r| r.decision == Verdict::Deny).collect();
    assert_eq!(denies.len(), cases.len());
    assert!(denies.iter().all(|r| r.status == Some(403) && r.dialled.is_none()));
}

#[tokio::test]
async fn path_rules_cannot_be_bypassed_with_dot_segments() {
    let (up, _e, p) = rig().await;
    let port = up.addr.port();
    for path in ["/v1/../admin", "/v1/%2e%2e/admin", "/v1/.%2E/admin", "/v1\\..\\admin"] {
        let resp = send(p.addr, &get(&format!("http://api.allowed.test:{port}{path}"), "")).await;
        assert_eq!(resp.status, 400, "{path}: {}", resp.text());
    }
    assert_eq!(up.accepted(), 0);
}

#[tokio::test]
async fn report_mode_allows_and_audits_would_deny() {
    let (up, _e, p) = rig().await;
    let raw = format!(
        "GET http://unlisted.test:{}/ HTTP/1.1\r\nHost: x\r\n{}Connection: close\r\n\r\n",
        up.addr.port(),
        auth("sb2", "tok2")
    );
    assert_eq!(send(p.addr, &raw).await.status, 200);
    let r = &p.audit.wait_for(1).await[0];
    assert_eq!(r.decision, Verdict::WouldDeny);
    assert_eq!(r.reason.as_deref(), Some("no_rule"));
    assert_eq!(r.policy.as_deref(), Some("everything"));
}

#[tokio::test]
async fn bad_targets_are_400() {
    let (up, _e, p) = rig().await;
    let port = up.addr.port();
    for (target, code) in [
        (format!("http://user:pw@allowed.test:{port}/"), "userinfo"),
        ("http://allowed.test:0443/".to_string(), "bad_port"),
        ("http://allowed.test:+80/".to_string(), "bad_port"),
        ("http://allowed.test:65616/".to_string(), "bad_port"),
        (format!("https://allowed.test:{port}/"), "bad_scheme"),
        (format!("ftp://allowed.test:{port}/"), "bad_scheme"),
        ("http://[fe80::1%25eth0]:80/".to_string(), "zone_id"),
    ] {
        let resp = send(p.addr, &get(&target, "")).await;
        assert_eq!(resp.status, 400, "{target}: {}", resp.text());
        assert_eq!(resp.header("x-cordon-reason"), Some(code), "{target}");
    }
    // Origin-form: someone talking to the proxy port as if it were a web server.
    let resp = send(p.addr, &get("/index.html", "")).await;
    assert_eq!(resp.status, 400);
    assert_eq!(resp.header("x-cordon-reason"), Some("not_proxy_request"));
    assert_eq!(up.accepted(), 0);
}

#[tokio::test]
async fn non_ascii_host_is_400() {
    let (_up, _e, p) = rig().await;
    let mut s = tokio::net::TcpStream::connect(p.addr).await.unwrap();
    let raw = format!(
        "GET http://b\u{fc}cher.test/ HTTP/1.1\r\nHost: x\r\n{}Connection: close\r\n\r\n",
        auth("sb1", "tok1")
    );
    tokio::io::AsyncWriteExt::write_all(&mut s, raw.as_bytes())
        .await
        .unwrap();
    assert_eq!(read_response(&mut s).await.unwrap().status, 400);
}

#[tokio::test]
async fn duplicate_host_is_400() {
    let (up, _e, p) = rig().await;
    let raw = format!(
        "GET http://allowed.test:{}/ HTTP/1.1\r\nHost: allowed.test\r\nHost: evil.test\r\n{}Connection: close\r\n\r\n",
        up.addr.port(),
        auth("sb1", "tok1")
    );
    let resp = send(p.addr, &raw).await;
    assert_eq!(resp.status, 400);
    assert_eq!(resp.header("x-cordon-reason"), Some("duplicate_host"));
    assert_eq!(up.accepted(), 0);
}
