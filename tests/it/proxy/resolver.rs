//! Names resolved by cordon's DNS resolver (`network.resolver: dns`, the default) against a real DNS server
//! (dnsmasq), and by the C library (`system`): answers judged by the guard, cached for their TTL and asked
//! again after it. cordon runs in a mount namespace of its own whose `/etc/resolv.conf` names the test's
//! dnsmasq, so nothing of the host's configuration changes (root only, like the namespace tests).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use crate::rigs::client::{auth, hash, read_head};
use crate::rigs::ports::free_port;
use crate::rigs::process::{BIN, await_listening};
use crate::rigs::wait::TimedChild;

/// The address dnsmasq answers on (port 53: resolv.conf cannot name another).
const DNS: &str = "127.0.0.153";

/// dnsmasq's TTL for every answer it gives.
const TTL: u64 = 2;

/// A child process killed when the test ends, also when it fails.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.timed_wait();
    }
}

async fn dnsmasq(dir: &Path) -> (Killed, PathBuf) {
    let log = dir.join("dnsmasq.log");
    let child = Command::new("dnsmasq")
        .args([
            "--no-daemon",
            "--conf-file=/dev/null",
            "--no-resolv",
            "--no-hosts",
            "--bind-interfaces",
            "--port=53",
            "--user=root",
            "--pid-file=",
            "--log-queries",
            "--host-record=api.test,127.0.0.1,::1",
            "--address=/meta.test/169.254.169.254",
            "--host-record=split.test,127.0.0.1,fd00::1",
            "--address=/nx.test/",
        ])
        .arg(format!("--listen-address={DNS}"))
        .arg(format!("--local-ttl={TTL}"))
        .arg(format!("--log-facility={}", log.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dnsmasq (Debian dnsmasq-base; .ci/run installs it)");
    let mut child = Killed(child);
    // Serving once it says so in its log; if it exits first (the address taken, say), say why.
    for _ in 0..100 {
        if let Ok(Some(status)) = child.0.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = child.0.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut err);
            }
            panic!("dnsmasq exited ({status}): {err}");
        }
        if std::fs::read_to_string(&log).is_ok_and(|l| l.contains("started")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (child, log)
}

/// How many A queries for `name` dnsmasq has logged.
fn queries(log: &Path, name: &str) -> usize {
    queries_of(log, "A", name)
}

/// How many queries of `qtype` for `name` dnsmasq has logged.
fn queries_of(log: &Path, qtype: &str, name: &str) -> usize {
    let needle = format!("query[{qtype}] {name} ");
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(&needle))
        .count()
}

/// cordon in a mount namespace whose /etc/resolv.conf is `resolv`.
async fn cordon(config: &Path, resolv: &Path, port: u16) -> Killed {
    let child = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(r#"mount --bind "$1" /etc/resolv.conf && exec "$2" run --config "$3""#)
        .arg("sh")
        .arg(resolv)
        .arg(BIN)
        .arg(config)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Killed(
        await_listening(child, &format!("127.0.0.1:{port}"), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        })
        .await,
    )
}

/// CONNECT to `host:port` through the proxy: the status and cordon's reason.
async fn connect(proxy: u16, host: &str, port: u16) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", proxy)).await.unwrap();
    let req = format!(
        "CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n{}\r\n",
        auth("sb", "tok")
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let head = read_head(&mut s).await;
    let reason = head.header("x-cordon-reason").unwrap_or_default().to_string();
    (head.status, reason)
}

fn config(dir: &Path, proxy: u16, upstream: u16, resolver: &str) -> PathBuf {
    let yaml = format!(
        r#"
listen: {{ proxy: 127.0.0.1:{proxy} }}
network: {{ allow_cidrs: ["127.0.0.0/8", "::1/128"], resolver: {resolver} }}
ca: {{ dir: {d}/cas-{resolver} }}
audit: {{ path: {d}/audit-{resolver}.jsonl }}
sandboxes:
  - {{ id: sb, user: u, token_sha256: {h}, policy: p }}
policies:
  p:
    allow:
      - {{ host: "*.test", ports: [{upstream}], tls: tunnel }}
"#,
        d = dir.display(),
        h = hash("tok"),
    );
    let path = dir.join(format!("cordon-{resolver}.yaml"));
    std::fs::write(&path, yaml).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn names_are_resolved_by_dns_cached_for_their_ttl_and_judged_by_the_guard() {
    if !crate::rigs::netns::available("names_are_resolved_by_dns_cached_for_their_ttl_and_judged_by_the_guard") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (dns, log) = dnsmasq(d).await;
    let resolv = d.join("resolv.conf");
    std::fs::write(&resolv, format!("nameserver {DNS}\noptions timeout:1 attempts:1\n")).unwrap();
    // The upstream: cordon dials it (before its 200) for every CONNECT under a tunnel rule.
    let upstream = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let up = upstream.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((s, _)) = upstream.accept().await {
            drop(s);
        }
    });
    let proxy = free_port();
    let child = cordon(&config(d, proxy, up, "dns"), &resolv, proxy).await;

    // A name the DNS server knows: dialled.
    assert_eq!(connect(proxy, "api.test", up).await, (200, String::new()));
    assert_eq!(queries(&log, "api.test"), 1);
    // Within the TTL: from the cache, no query.
    for _ in 0..3 {
        assert_eq!(connect(proxy, "api.test", up).await.0, 200);
    }
    assert_eq!(
        queries(&log, "api.test"),
        1,
        "answers within their TTL come from the cache"
    );
    assert_eq!(queries_of(&log, "AAAA", "api.test"), 1, "and the IPv6 answer");
    // After the TTL: asked again.
    tokio::time::sleep(Duration::from_millis(TTL * 1000 + 700)).await;
    assert_eq!(connect(proxy, "api.test", up).await.0, 200);
    assert_eq!(queries(&log, "api.test"), 2, "an expired answer is asked for again");

    // The guard judges what DNS answers: the metadata address, and a split answer with one private address
    // (refused whole), are refused before any dial; an unknown name does not resolve.
    assert_eq!(
        connect(proxy, "meta.test", up).await,
        (403, "metadata_address".to_string())
    );
    assert_eq!(
        connect(proxy, "split.test", up).await,
        (403, "special_range".to_string())
    );
    assert_eq!(connect(proxy, "nx.test", up).await, (502, "resolve_failed".to_string()));
    drop(child);

    // The C library's resolver (network.resolver: system) reads the same resolv.conf, and asks every time.
    let proxy = free_port();
    let child = cordon(&config(d, proxy, up, "system"), &resolv, proxy).await;
    let before = queries(&log, "api.test");
    for _ in 0..3 {
        assert_eq!(connect(proxy, "api.test", up).await.0, 200);
    }
    assert_eq!(queries(&log, "api.test"), before + 3, "getaddrinfo does not cache");
    assert_eq!(
        connect(proxy, "meta.test", up).await,
        (403, "metadata_address".to_string())
    );
    drop(child);
    drop(dns);
}
