//! Limits end to end: each hit at its configured bound and not before, other sandboxes unaffected; byte
//! budgets close tunnels; failed authentication throttled and audited once per burst; timeouts.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::rigs::client::{Resp, auth, closed_within, read_response};
use crate::rigs::control::*;
use crate::rigs::tls::{read_tls_response, tls_as};

async fn status(rig: &ControlRig, who: (&str, &str)) -> u16 {
    connect(rig, who, "allowed.test").await.0.status
}

/// Statuses of CONNECTs sent back to back until the first 429 (at most `most`).
async fn until_429(rig: &ControlRig, who: (&str, &str), most: usize) -> (usize, Resp) {
    for i in 1..=most {
        let (resp, _) = connect(rig, who, "allowed.test").await;
        if resp.status == 429 {
            return (i, resp);
        }
        assert_eq!(resp.status, 200, "request {i}: {}", resp.text());
    }
    panic!("no 429 within {most} requests");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sandbox_rate_refuses_at_its_burst_and_not_before() {
    let rig = control_rig("limits:\n  per_sandbox:\n    requests: { per_second: 1, burst: 4 }\n").await;
    // The burst passes whole; the next one (or, on a machine that stalled a second, the one after) is 429.
    let (n, resp) = until_429(&rig, ("sb1", "tok1"), 7).await;
    assert!((5..=6).contains(&n), "refused at request {n}");
    assert_eq!(resp.header("x-cordon-reason"), Some("sandbox_rate"));
    let retry: u64 = resp.header("retry-after").unwrap().parse().unwrap();
    assert!(retry >= 1);
    // Another sandbox is unaffected.
    assert_eq!(status(&rig, ("sb2", "tok2")).await, 200);
    assert!(
        rig.audit
            .wait_any(|r| r.reason.as_deref() == Some("sandbox_rate") && r.status == Some(429))
            .await
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_user_rate_spans_the_users_sandboxes() {
    let rig = control_rig("limits:\n  per_user:\n    requests: { per_second: 1, burst: 3 }\n").await;
    let a = rig.create("web", "10m").await;
    let b = rig.create("web", "10m").await;
    let a = (
        a["id"].as_str().unwrap().to_string(),
        a["credential"].as_str().unwrap().to_string(),
    );
    let b = (
        b["id"].as_str().unwrap().to_string(),
        b["credential"].as_str().unwrap().to_string(),
    );
    assert_eq!(status(&rig, (&a.0, &a.1)).await, 200);
    assert_eq!(status(&rig, (&a.0, &a.1)).await, 200);
    assert_eq!(status(&rig, (&b.0, &b.1)).await, 200);
    let (resp, _) = connect(&rig, (&b.0, &b.1), "allowed.test").await;
    assert_eq!(resp.status, 429, "alice's two sandboxes share her rate");
    assert_eq!(resp.header("x-cordon-reason"), Some("user_rate"));
    assert_eq!(status(&rig, ("sb2", "tok2")).await, 200, "bob is unaffected");
}

#[tokio::test(flavor = "multi_thread")]
async fn open_and_connection_caps() {
    let rig = control_rig("limits:\n  per_sandbox:\n    max_open: 2\n").await;
    let (r1, t1) = connect(&rig, ("sb1", "tok1"), "allowed.test").await;
    let (r2, _t2) = connect(&rig, ("sb1", "tok1"), "allowed.test").await;
    assert_eq!((r1.status, r2.status), (200, 200));
    let (r3, _) = connect(&rig, ("sb1", "tok1"), "allowed.test").await;
    assert_eq!(r3.status, 429);
    assert_eq!(r3.header("x-cordon-reason"), Some("sandbox_open_limit"));
    assert_eq!(
        status(&rig, ("sb2", "tok2")).await,
        200,
        "another sandbox is unaffected"
    );
    // Closing one gives its slot back.
    drop(t1);
    let mut ok = false;
    for _ in 0..40 {
        let (r, _t) = connect(&rig, ("sb1", "tok1"), "allowed.test").await;
        if r.status == 200 {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ok, "the slot of a closed tunnel was not given back");

    let rig = control_rig("limits:\n  per_sandbox:\n    connections: { per_second: 1, burst: 2 }\n").await;
    let (n, resp) = until_429(&rig, ("sb1", "tok1"), 5).await;
    assert!((3..=4).contains(&n), "refused at connection {n}");
    assert_eq!(resp.header("x-cordon-reason"), Some("connection_rate"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spent_download_budget_closes_the_sandboxs_tunnels_and_refuses_new_ones() {
    let rig = control_rig("limits:\n  per_sandbox:\n    download: 40KiB\n    budget_window: 1h\n").await;
    let target = format!("allowed.test:{}", rig.up.addr.port());
    let mut bystander = rig.tls(("sb1", "tok1")).await;
    let mut tls = rig.tls(("sb1", "tok1")).await;
    tls.write_all(format!("GET /big HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut got = 0usize;
    let mut buf = vec![0u8; 16384];
    loop {
        match tokio::time::timeout(Duration::from_secs(5), tls.read(&mut buf))
            .await
            .unwrap()
        {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    assert!(
        got < 100_000,
        "the whole 100 kB body came through a 40 KiB budget ({got} bytes)"
    );
    assert!(
        closed_within(&mut bystander, Duration::from_secs(1)).await,
        "another tunnel of the sandbox stayed open"
    );
    let (resp, _) = connect(&rig, ("sb1", "tok1"), "allowed.test").await;
    assert_eq!(resp.status, 429);
    assert_eq!(resp.header("x-cordon-reason"), Some("download_budget"));
    assert_eq!(
        status(&rig, ("sb2", "tok2")).await,
        200,
        "another sandbox is unaffected"
    );
    assert!(
        rig.until(Duration::from_secs(2), || rig.audit.now().iter().any(|r| r
            .reason
            .as_deref()
            == Some("byte_budget")
            && r.decision == cordon::audit::Verdict::Deny))
            .await,
        "no record says (as a denial) that the budget closed a tunnel"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn failed_authentication_is_throttled_per_address_and_audited_once_per_burst() {
    let rig = control_rig("limits:\n  auth_failures: { per_second: 1, burst: 3 }\n").await;
    for _ in 0..3 {
        assert_eq!(status(&rig, ("sb1", "wrong")).await, 407);
    }
    let (resp, _) = connect(&rig, ("sb1", "wrong"), "allowed.test").await;
    assert_eq!(resp.status, 429);
    assert_eq!(resp.header("x-cordon-reason"), Some("auth_throttled"));
    assert!(resp.header("retry-after").is_some());
    // While blocked, even the right token is refused from that address: guessing gets no answers.
    assert_eq!(status(&rig, ("sb1", "tok1")).await, 429);
    // Another address is unaffected.
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.bind("127.0.0.6:0".parse().unwrap()).unwrap();
    let mut other = sock.connect(rig.proxy).await.unwrap();
    let target = format!("allowed.test:{}", rig.up.addr.port());
    other
        .write_all(
            format!(
                "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{}\r\n",
                auth("sb1", "tok1")
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    assert_eq!(read_response(&mut other).await.unwrap().status, 200);
    // Three single records for the 407s; the throttled attempts make one record with their count.
    let singles = || {
        rig.audit
            .now()
            .iter()
            .filter(|r| r.reason.as_deref() == Some("auth_invalid"))
            .count()
    };
    rig.until(Duration::from_secs(2), || singles() >= 3).await;
    assert_eq!(singles(), 3);
    assert!(
        !rig.audit
            .now()
            .iter()
            .any(|r| r.reason.as_deref() == Some("auth_throttled"))
    );
    rig.state.auth_bursts.flush(&rig.state.audit);
    let bursts: Vec<_> = rig
        .audit
        .now()
        .into_iter()
        .filter(|r| r.kind == cordon::audit::Kind::AuthFailures)
        .collect();
    assert_eq!(bursts.len(), 1);
    assert_eq!(bursts[0].count, Some(2));
    assert!(bursts[0].client.starts_with("127.0.0.1"));
}

/// The config with `timeouts:` replaced.
fn with_timeouts(t: &'static str) -> impl Fn(String, u16) -> String {
    move |yaml, _| yaml.replace("timeouts:\n  request_headers: 2s\n  drain: 3s\n", t)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_header_client_is_cut_while_a_busy_tunnel_lives_until_its_maximum_age() {
    let t = "timeouts:\n  request_headers: 1s\n  idle: 1s\n  tunnel_max: 3s\n  drain: 3s\n";
    let rig = control_rig_edit("", with_timeouts(t)).await;
    // A busy intercepted tunnel: a request every 300 ms.
    let target = format!("allowed.test:{}", rig.up.addr.port());
    let mut busy = rig.tls(("sb1", "tok1")).await;
    // A client trickling its head.
    let mut slow = TcpStream::connect(rig.proxy).await.unwrap();
    slow.write_all(b"GET http://allowed.test/ HTTP/1.1\r\n").await.unwrap();
    let started = std::time::Instant::now();
    let mut slow_cut = None;
    let mut served = 0;
    while started.elapsed() < Duration::from_millis(2500) {
        if slow_cut.is_none() && slow.write_all(b"X").await.is_err() {
            slow_cut = Some(started.elapsed());
        }
        if slow_cut.is_none() {
            let mut b = [0u8; 64];
            if let Ok(Ok(0)) = tokio::time::timeout(Duration::from_millis(10), slow.read(&mut b)).await {
                slow_cut = Some(started.elapsed());
            }
        }
        busy.write_all(format!("GET /hello HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes())
            .await
            .unwrap();
        assert!(
            read_tls_response(&mut busy).await.starts_with("HTTP/1.1 200"),
            "the busy tunnel failed"
        );
        served += 1;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(
        slow_cut.is_some_and(|t| t < Duration::from_millis(2200)),
        "the slow client was not cut: {slow_cut:?}"
    );
    assert!(served >= 6, "the busy tunnel served {served}");
    // Past tunnel_max it is closed, and the record says why.
    assert!(
        closed_within(&mut busy, Duration::from_secs(2)).await,
        "the tunnel outlived timeouts.tunnel_max"
    );
    assert!(
        rig.until(Duration::from_secs(2), || rig
            .audit
            .now()
            .iter()
            .any(|r| r.reason.as_deref() == Some("tunnel_max_lifetime")))
            .await
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn idle_tunnels_and_stalled_handshakes_are_closed() {
    let t = "timeouts:\n  request_headers: 5s\n  idle: 1s\n  tls_handshake: 5s\n  drain: 3s\n";
    let rig = control_rig_edit("", with_timeouts(t)).await;
    // A blind tunnel (tls: tunnel) with a finished TLS session, then silence.
    let target = format!("pinned.test:{}", rig.up.addr.port());
    let upstream_ca = rig.dir.path().join("upstream-ca.pem");
    let mut pinned = tls_as(
        rig.proxy,
        ("sb1", "tok1"),
        &target,
        "pinned.test",
        &upstream_ca,
        b"http/1.1",
    )
    .await
    .unwrap();
    assert!(
        closed_within(&mut pinned, Duration::from_secs(3)).await,
        "an idle tunnel stayed open"
    );
    assert!(
        rig.until(Duration::from_secs(2), || rig
            .audit
            .now()
            .iter()
            .any(|r| r.reason.as_deref() == Some("idle_timeout")))
            .await
    );

    let t = "timeouts:\n  request_headers: 5s\n  idle: 10s\n  tls_handshake: 1s\n  drain: 3s\n";
    let rig = control_rig_edit("", with_timeouts(t)).await;
    let (resp, mut silent) = connect(&rig, ("sb1", "tok1"), "allowed.test").await;
    assert_eq!(resp.status, 200);
    assert!(
        closed_within(&mut silent, Duration::from_secs(3)).await,
        "a client that never started TLS held the tunnel"
    );
    assert!(
        rig.until(Duration::from_secs(2), || rig.audit.now().iter().any(|r| r
            .reason
            .as_deref()
            == Some("tls_handshake_timeout")
            && r.side.as_deref() == Some("downstream")))
            .await
    );
}
