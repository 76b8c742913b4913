//! CONNECT tunnels: decided before 200, bytes both ways, one audit record at the end.

use crate::rig::*;
use cordon::audit::{Kind, Verdict};
use std::sync::atomic::Ordering;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[tokio::test]
async fn allowed_tunnel_carries_bytes_and_is_audited_at_the_end() {
    let (_up, (echo, accepts), p) = rig().await;
    let mut s = TcpStream::connect(p.addr).await.unwrap();
    let raw = format!(
        "CONNECT echo.test:{0} HTTP/1.1\r\nHost: echo.test:{0}\r\n{1}\r\n",
        echo.port(),
        auth("sb1", "tok1")
    );
    s.write_all(raw.as_bytes()).await.unwrap();
    assert_eq!(read_connect_response(&mut s).await, 200);
    // Bytes that would be a bad HTTP head are just bytes inside a tunnel.
    let payload = b"GET / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\nping";
    s.write_all(payload).await.unwrap();
    let mut buf = vec![0u8; payload.len()];
    tokio::time::timeout(std::time::Duration::from_secs(5), s.read_exact(&mut buf))
        .await
        .expect("echo timed out")
        .unwrap();
    assert_eq!(&buf[..], &payload[..]);
    assert_eq!(accepts.load(Ordering::SeqCst), 1);
    assert!(p.audit.now().is_empty(), "the tunnel's record is written when it ends");
    drop(s);
    let r = &p.audit.wait_for(1).await[0];
    assert_eq!(r.kind, Kind::Connect);
    assert_eq!(r.method.as_deref(), Some("CONNECT"));
    assert_eq!(r.host.as_deref(), Some("echo.test"));
    assert_eq!(r.decision, Verdict::Allow);
    assert_eq!(r.status, Some(200));
    assert_eq!(r.bytes_up, payload.len() as u64);
    assert_eq!(r.bytes_down, payload.len() as u64);
    assert_eq!(r.dialled.as_deref(), Some(echo.to_string().as_str()));
}

#[tokio::test]
async fn denied_tunnels_open_no_connection() {
    let (_up, (echo, accepts), p) = rig().await;
    for (target, status, code) in [
        ("unlisted.test:443".to_string(), 403, "no_rule"),
        (format!("echo.test:{}", echo.port() as u32 + 1), 403, "port_not_allowed"),
        // Rules that restrict methods or paths cannot be enforced inside an opaque tunnel.
        (format!("api.allowed.test:{}", echo.port()), 403, "port_not_allowed"),
        ("echo.test".to_string(), 400, "missing_port"),
        ("echo.test:0443".to_string(), 400, "bad_port"),
        ("user@echo.test:443".to_string(), 400, "userinfo"),
    ] {
        let raw = format!(
            "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{}\r\n",
            auth("sb1", "tok1")
        );
        let resp = send(p.addr, &raw).await;
        assert_eq!(resp.status, status, "{target}: {}", resp.text());
        assert_eq!(resp.header("x-cordon-reason"), Some(code), "{target}");
    }
    assert_eq!(accepts.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn tunnel_to_a_rule_with_method_limits_needs_inspection() {
    let (up, _e, p) = rig().await;
    let target = format!("api.allowed.test:{}", up.addr.port());
    let raw = format!(
        "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{}\r\n",
        auth("sb1", "tok1")
    );
    let resp = send(p.addr, &raw).await;
    assert_eq!(resp.status, 403);
    assert_eq!(resp.header("x-cordon-reason"), Some("needs_inspection"));
    assert_eq!(up.accepted(), 0);
}

#[tokio::test]
async fn connect_to_an_unreachable_upstream_is_502() {
    let (_up, _e, p) = rig().await;
    // A port on 127.0.0.2 nobody listens on; the report-mode sandbox lets the policy pass.
    let listener = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let raw = format!(
        "CONNECT unlisted.test:{port} HTTP/1.1\r\nHost: x\r\n{}\r\n",
        auth("sb2", "tok2")
    );
    let resp = send(p.addr, &raw).await;
    assert_eq!(resp.status, 502);
    assert_eq!(resp.header("x-cordon-reason"), Some("connect_failed"));
    assert!(
        !resp.text().contains("127.0.0.2"),
        "the dialled address is not shown to the sandbox"
    );
    let r = &p.audit.wait_for(1).await[0];
    assert_eq!(r.status, Some(502));
    assert!(
        r.error.as_deref().unwrap_or("").contains("127.0.0.2"),
        "operators see it: {r:?}"
    );
}
