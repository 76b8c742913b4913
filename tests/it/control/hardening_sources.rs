//! One source address, before it has authenticated, tried the way an attacker would, through the binary:
//! silent connections must not take every slot, the first head has a shorter deadline than the rest, and
//! failed authentications for one sandbox id must not lock out its neighbours behind the same address.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};

use crate::rigs::client::{auth, closed_within, read_response};
use crate::rigs::gateway::Running;
use crate::rigs::ports::free_port;
use crate::rigs::process::spawn_cordon;
use crate::rigs::proxy::config;
use crate::rigs::upstreams::upstream;

/// A connection to `proxy` from the local address `ip` (127.0.0.0/8 is all ours).
async fn from(ip: &str, proxy: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{ip}:0").parse().unwrap()).unwrap();
    socket.connect(proxy).await.unwrap()
}

/// GET http://allowed.test:{up}/ as `id:token` from `ip`: the status and the reason header.
async fn get(ip: &str, proxy: SocketAddr, up: u16, id: &str, token: &str) -> (u16, String) {
    let mut s = from(ip, proxy).await;
    let req = format!(
        "GET http://allowed.test:{up}/ HTTP/1.1\r\nHost: allowed.test:{up}\r\n{}Connection: close\r\n\r\n",
        auth(id, token)
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let r = tokio::time::timeout(Duration::from_secs(5), read_response(&mut s))
        .await
        .expect("no answer within 5 s")
        .expect("an answer");
    let reason = r.header("x-cordon-reason").unwrap_or_default().to_string();
    (r.status, reason)
}

/// A cordon process with `top` more top-level YAML: (the child, its proxy address, the upstream's port).
async fn cordon(dir: &std::path::Path, top: &str) -> (Running, SocketAddr, crate::rigs::upstreams::Upstream) {
    let up = upstream("127.0.0.2").await;
    let port = free_port();
    let yaml = config(
        up.addr.port(),
        1,
        &format!("listen: {{ proxy: 127.0.0.1:{port} }}\n{top}"),
    )
    // Head deadlines of its own: the first one shorter than the rest.
    .replace(
        "timeouts:\n  request_headers: 2s\n",
        "timeouts:\n  request_headers: 10s\n  first_request_headers: 2s\n",
    );
    let path = dir.join("cordon.yaml");
    std::fs::write(&path, yaml).unwrap();
    let child = spawn_cordon(&path, port, &[]).await;
    (Running(child), ([127, 0, 0, 1], port).into(), up)
}

#[tokio::test(flavor = "multi_thread")]
async fn silent_connections_from_one_address_do_not_starve_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let top = "limits: { max_connections: 40, per_source: { unauthenticated: 20 } }\n";
    let (child, proxy, up) = cordon(dir.path(), top).await;
    let up = up.addr.port();

    // 60 connections from one address that never say a word: 20 are held, the rest answered 429 at once.
    let mut opened = Vec::new();
    for _ in 0..60 {
        opened.push(from("127.0.0.9", proxy).await);
    }
    // Well within first_request_headers (2 s): every answer has come by now, and no silent one was closed.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut silent = Vec::new();
    let mut refused = 0;
    for mut s in opened {
        let mut buf = [0u8; 256];
        match tokio::time::timeout(
            Duration::from_millis(20),
            tokio::io::AsyncReadExt::read(&mut s, &mut buf),
        )
        .await
        {
            Ok(Ok(n)) if n > 0 => {
                let text = String::from_utf8_lossy(&buf[..n]).to_lowercase();
                assert!(
                    text.starts_with("http/1.1 429")
                        && text.contains("unauthenticated_limit")
                        && text.contains("retry-after"),
                    "{text}"
                );
                refused += 1;
            }
            _ => silent.push(s),
        }
    }
    assert_eq!((silent.len(), refused), (20, 40));
    // A sandbox on another address is served (the slots were not all taken), and so is one on the same
    // address that speaks: its connection is not one of the silent ones... once a silent one has gone.
    assert_eq!(get("127.0.0.10", proxy, up, "sb1", "tok1").await, (200, String::new()));
    drop(silent.pop());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(get("127.0.0.9", proxy, up, "sb1", "tok1").await.0, 200);

    // The silent ones are closed after first_request_headers (2 s), well before request_headers (10 s).
    let start = Instant::now();
    for s in &mut silent {
        assert!(
            closed_within(s, Duration::from_secs(4)).await,
            "a silent connection stayed open"
        );
    }
    assert!(start.elapsed() < Duration::from_secs(4), "{:?}", start.elapsed());
    drop(child);
}

#[tokio::test(flavor = "multi_thread")]
async fn one_sandboxs_bad_tokens_do_not_lock_out_its_neighbours() {
    let dir = tempfile::tempdir().unwrap();
    let top = "limits: { auth_failures: { per_second: 1, burst: 3 }, per_source: { auth_failures: { per_second: 1, burst: 12 } } }\n";
    let (child, proxy, up) = cordon(dir.path(), top).await;
    let up = up.addr.port();
    let nat = "127.0.0.11";

    // sb1 behind the NAT keeps sending a wrong token: after 3 failures it is throttled.
    let mut statuses = Vec::new();
    for _ in 0..6 {
        statuses.push(get(nat, proxy, up, "sb1", "wrong").await);
    }
    assert_eq!(
        statuses[..3].iter().map(|s| s.0).collect::<Vec<_>>(),
        [407, 407, 407],
        "{statuses:?}"
    );
    assert!(
        statuses[3..].iter().all(|(s, r)| *s == 429 && r == "auth_throttled"),
        "{statuses:?}"
    );
    // Even its right token waits out the block: the guesses for that id are what is throttled.
    assert_eq!(
        get(nat, proxy, up, "sb1", "tok1").await,
        (429, "auth_throttled".to_string())
    );
    // sb2 behind the same address, with its right token: served.
    assert_eq!(get(nat, proxy, up, "sb2", "tok2").await.0, 200);

    // Guessing across many ids meets the address's ceiling (12 failures, 3 spent above): then everything from
    // the address waits, sb2 included, while other addresses do not.
    for i in 0..20 {
        let _ = get(nat, proxy, up, &format!("guess-{i}"), "x").await;
    }
    assert_eq!(
        get(nat, proxy, up, "sb2", "tok2").await,
        (429, "auth_throttled".to_string())
    );
    assert_eq!(get("127.0.0.12", proxy, up, "sb2", "tok2").await.0, 200);
    drop(child);
}
