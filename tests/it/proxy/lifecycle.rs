//! Connection cap, slow clients, and draining on shutdown.

use crate::rigs::client::*;
use crate::rigs::proxy::*;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

#[tokio::test]
async fn connections_over_the_cap_get_503() {
    let (_up, _e, p) = rig_with("limits:\n  max_connections: 1").await;
    let _held = TcpStream::connect(p.addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut second = TcpStream::connect(p.addr).await.unwrap();
    let resp = read_response(&mut second).await.unwrap();
    assert_eq!(resp.status, 503);
    assert_eq!(resp.header("x-cordon-reason"), Some("too_many_connections"));
}

#[tokio::test]
async fn a_client_trickling_its_head_is_cut_off() {
    let (_up, _e, p) = rig().await; // request_headers: 2s
    let mut s = TcpStream::connect(p.addr).await.unwrap();
    s.write_all(b"GET http://allowed.test/ HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let mut cut = false;
    for _ in 0..10 {
        if s.write_all(b"X-Slow: 1\r\n").await.is_err() {
            cut = true;
            break;
        }
        if closed_quickly(&mut s).await {
            cut = true;
            break;
        }
    }
    assert!(cut, "connection still open after {:?}", started.elapsed());
}

async fn closed_quickly(s: &mut TcpStream) -> bool {
    use tokio::io::AsyncReadExt;
    let mut b = [0u8; 512];
    matches!(
        tokio::time::timeout(Duration::from_millis(500), s.read(&mut b)).await,
        Ok(Ok(_)) | Ok(Err(_))
    )
}

#[tokio::test]
async fn shutdown_drains_in_flight_requests_then_refuses_new_ones() {
    let (up, _e, mut p) = rig().await;
    let addr = p.addr;
    let raw = format!(
        "GET http://allowed.test:{}/slow HTTP/1.1\r\nHost: x\r\n{}Connection: close\r\n\r\n",
        up.addr.port(),
        auth("sb1", "tok1")
    );
    let in_flight = tokio::spawn(async move { send(addr, &raw).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let done = p.shutdown();
    let resp = in_flight.await.unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(resp.text(), "slow hello\n");
    tokio::time::timeout(Duration::from_secs(5), done)
        .await
        .unwrap()
        .unwrap();
    assert!(TcpStream::connect(addr).await.is_err(), "the listener is closed");
    assert_eq!(p.audit.wait_for(1).await[0].status, Some(200));
}

#[tokio::test]
async fn tunnels_still_open_at_the_drain_deadline_are_cut_and_audited() {
    let (_up, (echo, _), mut p) = rig().await; // drain: 3s
    let mut s = TcpStream::connect(p.addr).await.unwrap();
    let raw = format!(
        "CONNECT echo.test:{0} HTTP/1.1\r\nHost: x\r\n{1}\r\n",
        echo.port(),
        auth("sb1", "tok1")
    );
    s.write_all(raw.as_bytes()).await.unwrap();
    assert_eq!(read_connect_response(&mut s).await, 200);
    let done = p.shutdown();
    tokio::time::timeout(Duration::from_secs(8), done)
        .await
        .unwrap()
        .unwrap();
    assert!(closed(&mut s).await);
    let r = &p.audit.wait_for(1).await[0];
    assert!(r.error.as_deref().unwrap_or("").contains("shutdown"), "{r:?}");
}
