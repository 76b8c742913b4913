//! Identity: 407 cases, per-request judgement on keep-alive, source-address sandboxes.

use crate::rigs::client::*;
use crate::rigs::proxy::*;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};

#[tokio::test]
async fn missing_malformed_or_wrong_credentials_get_407() {
    let (up, _e, p) = rig().await;
    let target = format!("http://allowed.test:{}/", up.addr.port());
    for (creds, code) in [
        (String::new(), "auth_missing"),
        (auth("sb1", "wrong"), "auth_invalid"),
        (auth("nobody", "tok1"), "auth_invalid"),
        (auth("sb2", "tok1"), "auth_invalid"),
        ("Proxy-Authorization: Bearer tok1\r\n".to_string(), "auth_malformed"),
        (
            "Proxy-Authorization: Basic !!notbase64\r\n".to_string(),
            "auth_malformed",
        ),
        (
            format!("{}{}", auth("sb1", "tok1"), auth("sb2", "tok2")),
            "auth_malformed",
        ),
    ] {
        let raw = format!("GET {target} HTTP/1.1\r\nHost: x\r\n{creds}Connection: close\r\n\r\n");
        let resp = send(p.addr, &raw).await;
        assert_eq!(resp.status, 407, "{creds:?}");
        assert_eq!(resp.header("proxy-authenticate"), Some("Basic realm=\"cordon\""));
        assert_eq!(resp.header("x-cordon-reason"), Some(code), "{creds:?}");
        assert!(!resp.text().contains("tok1"), "no token echoed");
    }
    // CONNECT is judged the same way, before anything is dialled.
    let resp = send(
        p.addr,
        "CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n",
    )
    .await;
    assert_eq!(resp.status, 407);
    assert_eq!(up.accepted(), 0);
    let recs = p.audit.wait_for(8).await;
    assert!(recs.iter().all(|r| r.status == Some(407) && r.sandbox.is_none()));
    assert!(
        recs.iter().all(|r| r.host.as_deref() == Some("allowed.test")),
        "407s still name the destination"
    );
}

#[tokio::test]
async fn keep_alive_never_inherits_identity() {
    let (up, _e, p) = rig().await;
    let target = format!("http://allowed.test:{}/", up.addr.port());
    let mut s = TcpStream::connect(p.addr).await.unwrap();
    let first = format!("GET {target} HTTP/1.1\r\nHost: x\r\n{}\r\n", auth("sb1", "tok1"));
    s.write_all(first.as_bytes()).await.unwrap();
    assert_eq!(read_response(&mut s).await.unwrap().status, 200);
    let second = format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n");
    s.write_all(second.as_bytes()).await.unwrap();
    assert_eq!(read_response(&mut s).await.unwrap().status, 407);
    let third = format!("GET {target} HTTP/1.1\r\nHost: x\r\n{}\r\n", auth("sb2", "tok2"));
    s.write_all(third.as_bytes()).await.unwrap();
    assert_eq!(read_response(&mut s).await.unwrap().status, 200);
    let recs = p.audit.wait_for(3).await;
    let who: Vec<Option<&str>> = recs.iter().map(|r| r.sandbox.as_deref()).collect();
    assert_eq!(who, vec![Some("sb1"), None, Some("sb2")]);
}

#[tokio::test]
async fn source_address_identifies_a_gateway_sandbox() {
    let (up, _e, p) = rig().await;
    let sock = TcpSocket::new_v4().unwrap();
    sock.bind("127.0.0.5:0".parse().unwrap()).unwrap();
    let mut s = sock.connect(p.addr).await.unwrap();
    let raw = format!(
        "GET http://allowed.test:{}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        up.addr.port()
    );
    s.write_all(raw.as_bytes()).await.unwrap();
    assert_eq!(read_response(&mut s).await.unwrap().status, 200);
    let r = &p.audit.wait_for(1).await[0];
    assert_eq!(r.sandbox.as_deref(), Some("gw"));
    assert_eq!(r.user.as_deref(), Some("carol"));
    assert!(r.client.starts_with("127.0.0.5:"));
}
