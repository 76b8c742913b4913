//! CONNECT tunnels: decided before 200, bytes both ways, one audit record at the end.

use crate::rigs::client::*;
use crate::rigs::proxy::*;
use crate::rigs::wait::Within;
use std::sync::atomic::Ordering;

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

#[tokio::test(flavor = "multi_thread")]
async fn unreachable_upstream_is_502_without_naming_the_address() {
    let rig = crate::rigs::tls::tls_rig("").await;
    // A port on 127.0.0.2 nobody listens on; the report-mode sandbox lets the policy pass.
    let listener = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let ca = rig.sandbox_ca_file("sb2");
    let url = format!("https://unlisted.test:{port}/");
    let o = rig
        .curl("sb2", "tok2", &ca)
        .args(["-w", " %{http_code}", &url])
        .timed_output()
        .unwrap();
    let body = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(body.ends_with(" 502"), "{body}");
    assert!(
        !body.contains("127.0.0.2"),
        "the dialled address is not shown to the sandbox: {body}"
    );
    let recs = p_wait(&rig).await;
    let r = recs.iter().find(|r| r.status == Some(502)).unwrap();
    assert_eq!(r.reason.as_deref(), Some("connect_failed"));
    assert!(
        r.error.as_deref().unwrap_or("").contains("127.0.0.2"),
        "operators see it: {r:?}"
    );
}

async fn p_wait(rig: &crate::rigs::tls::TlsRig) -> Vec<crate::rigs::proxy::Record> {
    rig.proxy.audit.wait_for(2).await
}
