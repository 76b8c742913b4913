//! WebSocket memory is bounded and comes back (issue 34, item 7), measured on the binary: several WebSockets
//! through cordon's interception, each relaying large messages (one frame each) both ways through echo masking at
//! once; cordon's peak resident memory (`VmHWM`) stays under half a message per connection, since frames are
//! relayed in pieces as they arrive, and once they have closed its resident memory (`VmRSS`) is back near where
//! it was before them.

use std::path::Path;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;

use crate::rigs::client::hash;
use crate::rigs::ports::free_port;
use crate::rigs::tls::{test_ca, tls_as};
use crate::rigs::wait::{TimedChild, Within};
use crate::rigs::websocket::{next, wss_server};

const MIB: usize = 1024 * 1024;

/// How many WebSockets at once.
const CONNECTIONS: usize = 6;

/// Each message's size: under the 16 MiB default limit, large enough to dominate everything else cordon holds.
const MESSAGE: usize = 12 * MIB;

/// Messages each way on each connection.
const ROUNDS: usize = 3;

/// A field of `/proc/PID/status`, in KiB.
fn status_kib(pid: u32, field: &str) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.trim().strip_suffix("kB")?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

fn yaml(dir: &Path, port: u16, u: u16) -> String {
    format!(
        r#"
listen: {{ proxy: 127.0.0.1:{port} }}
network:
  allow_cidrs: ["127.0.0.0/8"]
  hosts: {{ allowed.test: 127.0.0.2 }}
ca: {{ dir: {d}/cas }}
vault: {{ file: {{ path: {d}/vault/cordon.vault }} }}
upstream: {{ extra_roots: [{d}/upstream-ca.pem] }}
credentials:
  bearer:
    source: {{ env: WS_MEMORY_BEARER }}
    bind: {{ hosts: [allowed.test], ports: [{u}] }}
    inject: {{ header: Authorization, value: "Bearer {{secret}}" }}
sandboxes:
  - {{ id: sb1, user: alice, token_sha256: {h}, policy: base }}
policies:
  base:
    credentials: [bearer]
    allow:
      - {{ host: allowed.test, ports: [{u}] }}
"#,
        d = dir.display(),
        h = hash("tok1"),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn websockets_relaying_large_messages_hold_a_bounded_amount_and_give_it_back_after_close() {
    let ca = test_ca("upstream test CA");
    let (server, _) = wss_server(ca.server_config(&["allowed.test"])).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("upstream-ca.pem"), &ca.pem).unwrap();
    let port = free_port();
    let config = dir.path().join("cordon.yaml");
    std::fs::write(&config, yaml(dir.path(), port, server.port())).unwrap();
    let mut child =
        crate::rigs::process::spawn_cordon(&config, port, &[("WS_MEMORY_BEARER", "sk-ws-memory-0123456789")]).await;
    let pid = child.id();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cordon"))
        .args(["ca", "export", "--sandbox", "sb1", "--config"])
        .arg(&config)
        .timed_output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let sandbox_ca = dir.path().join("sb1-ca.pem");
    std::fs::write(&sandbox_ca, out.stdout).unwrap();
    let proxy = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let authority = format!("allowed.test:{}", server.port());

    let open = || async {
        let tls = tls_as(
            proxy,
            ("sb1", "tok1"),
            &authority,
            "allowed.test",
            &sandbox_ca,
            b"http/1.1",
        )
        .await
        .unwrap();
        let (ws, resp) = tokio_tungstenite::client_async(format!("wss://{authority}/ws"), tls)
            .await
            .unwrap();
        assert_eq!(resp.status(), 101);
        ws
    };
    // One small exchange first, so what every connection needs anyway (TLS, the sandbox's leaf) is in the
    // baseline.
    let mut warm = open().await;
    warm.send(Message::text("hello")).await.unwrap();
    assert_eq!(next(&mut warm).await.len(), 5);
    warm.close(None).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let baseline = status_kib(pid, "VmRSS:");

    let started = std::time::Instant::now();
    let mut tasks = Vec::new();
    for i in 0..CONNECTIONS {
        let mut ws = open().await;
        tasks.push(tokio::spawn(async move {
            for round in 0..ROUNDS {
                // From the sandbox (scanned) and echoed back by the upstream (masked).
                let fill = b'a' + ((i + round) % 26) as u8;
                ws.send(Message::binary(vec![fill; MESSAGE])).await.unwrap();
                let echoed = tokio::time::timeout(Duration::from_secs(60), ws.next())
                    .await
                    .expect("the echo in time")
                    .expect("a message")
                    .expect("no error");
                assert_eq!(echoed.len(), MESSAGE);
                assert!(echoed.into_data().iter().all(|b| *b == fill));
                // From the upstream alone.
                ws.send(Message::text(format!("big {MESSAGE}"))).await.unwrap();
                let big = tokio::time::timeout(Duration::from_secs(60), ws.next())
                    .await
                    .expect("the answer in time")
                    .expect("a message")
                    .expect("no error");
                assert_eq!(big.len(), MESSAGE);
            }
            ws.close(None).await.unwrap();
            // Read to the end, so the close handshake completes on cordon's side too.
            while let Some(Ok(_)) = crate::rigs::wait::within(
                "the end of the WebSocket close handshake",
                std::time::Duration::from_secs(60),
                ws.next(),
            )
            .await
            {}
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let relayed = CONNECTIONS * ROUNDS * 3 * MESSAGE;
    // A figure to read, not to assert: the time depends on the machine and what else runs on it.
    eprintln!(
        "relayed {} MiB through cordon in {:.2?}",
        relayed / MIB,
        started.elapsed()
    );
    let peak = status_kib(pid, "VmHWM:");
    // The closes reach cordon's relays and their buffers are dropped.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = status_kib(pid, "VmRSS:");
    let mib = |kib: usize| kib as f64 / 1024.0;
    eprintln!(
        "cordon RSS: baseline {:.1} MiB, peak {:.1} MiB, after close {:.1} MiB ({CONNECTIONS} WebSockets, {ROUNDS} x 2 \
         messages of {} MiB each way)",
        mib(baseline),
        mib(peak),
        mib(after),
        MESSAGE / MIB
    );
    let _ = child.kill();
    let _ = child.timed_wait();
    // Frames are relayed in pieces as they arrive: a WebSocket holds about a piece each way, not the message
    // (held whole, several times, it would be over 4 messages each).
    let bound = baseline + CONNECTIONS * MESSAGE / 2 / 1024;
    assert!(peak < bound, "peak {peak} KiB over {bound} KiB");
    // After close, what the relays held is given back.
    assert!(
        after < baseline + 2 * MESSAGE / 1024,
        "after close {after} KiB, baseline {baseline} KiB"
    );
}
