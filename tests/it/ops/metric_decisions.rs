//! The metric and the audit record agree on every decision, through the binary: for each kind of request (allowed
//! and answered, denied, allowed and then refused by the upstream, allowed and then timed out, a tunnel whose
//! upstream refuses, an approval denied, rate limited) exactly one `cordon_requests_total` series grows by one, and
//! its `decision` and `reason` are the record's; its `outcome` is `error` exactly for what was let through and
//! then failed.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::rigs::client::hash;
use crate::rigs::control::admin_request;
use crate::rigs::ports::free_port;
use crate::rigs::process::{curl, spawn_cordon};
use crate::rigs::upstreams::upstream;
use crate::rigs::wait::TimedChild;

/// Every `cordon_requests_total` series (its labels as written) with its value.
async fn requests_total(admin: SocketAddr) -> BTreeMap<String, f64> {
    let (status, _, text) = admin_request(admin, "GET", "/metrics", None, "").await;
    assert_eq!(status, 200);
    text.lines()
        .filter_map(|l| l.strip_prefix("cordon_requests_total"))
        .filter_map(|l| l.rsplit_once(' '))
        .map(|(labels, v)| (labels.to_owned(), v.parse().unwrap()))
        .collect()
}

/// The labels of the one series that grew from `before` to `after`, which must have grown by exactly one.
fn the_one_increment(before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>) -> BTreeMap<String, String> {
    let grown: Vec<(&String, f64)> = after
        .iter()
        .map(|(k, v)| (k, v - before.get(k).copied().unwrap_or(0.0)))
        .filter(|(_, d)| *d != 0.0)
        // A decision through the admin API is a record (and a count) of its own, kind admin.
        .filter(|(k, _)| !k.contains("kind=\"admin\""))
        .collect();
    assert_eq!(grown.len(), 1, "not one series grew: {grown:?}");
    assert_eq!(grown[0].1, 1.0, "{grown:?}");
    grown[0]
        .0
        .trim_start_matches('{')
        .trim_end_matches('}')
        .split(',')
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap();
            (k.to_owned(), v.trim_matches('"').to_owned())
        })
        .collect()
}

/// The records of the audit file so far.
fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["decision"].is_string() && v["kind"] != "admin")
        .collect()
}

/// Wait for the audit file to hold `count` records of `sandbox`; the last of them.
async fn record_of(path: &Path, sandbox: &str, count: usize) -> Value {
    for _ in 0..200 {
        let mine: Vec<Value> = records(path).into_iter().filter(|r| r["sandbox"] == sandbox).collect();
        if mine.len() >= count {
            assert_eq!(mine.len(), count, "more records of {sandbox} than requests: {mine:#?}");
            return mine[count - 1].clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no record {count} of {sandbox} in {}", path.display());
}

/// curl through cordon as `sandbox` (its token is `t-SANDBOX`), in the background; `tunnel` asks with CONNECT.
fn request(proxy: u16, sandbox: &str, url: &str, tunnel: bool) -> Child {
    let mut c = curl();
    c.args(["-o", "/dev/null", "-x"])
        .arg(format!("http://{sandbox}:t-{sandbox}@127.0.0.1:{proxy}"));
    if tunnel {
        // The CONNECT's answer: there is no other when the tunnel fails.
        c.args(["--proxytunnel", "-w", "%{http_connect}"]);
    } else {
        c.args(["-w", "%{http_code}"]);
    }
    c.arg(url).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap()
}

/// The status curl saw (with --proxytunnel, the CONNECT's), 0 for none.
async fn status(child: Child) -> u16 {
    let out = tokio::task::spawn_blocking(move || child.timed_wait_with_output().unwrap())
        .await
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(0)
}

/// Deny the one request waiting for approval, once it waits.
async fn deny_the_pending_approval(admin: SocketAddr, token: &str) {
    for _ in 0..200 {
        let (_, _, body) = admin_request(admin, "GET", "/v1/approvals", Some(token), "").await;
        let v: Value = serde_json::from_str(&body).unwrap();
        if let Some(id) = v["pending"][0]["id"].as_str() {
            let path = format!("/v1/approvals/{id}");
            let (status, _, body) = admin_request(admin, "POST", &path, Some(token), r#"{"decision": "deny"}"#).await;
            assert_eq!(status, 200, "{body}");
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no request was held for approval");
}

/// One kind of request: what the sandbox gets, and what the record and the metric say.
struct Row {
    what: &'static str,
    sandbox: &'static str,
    url: String,
    tunnel: bool,
    status: u16,
    kind: &'static str,
    decision: &'static str,
    reason: &'static str,
    outcome: &'static str,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_metric_carries_the_records_decision_for_every_kind_of_request() {
    let up = upstream("127.0.0.2").await;
    // Accepts and never answers.
    let stall = tokio::net::TcpListener::bind("127.0.0.3:0").await.unwrap();
    let stall_port = stall.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = stall.accept().await {
            held.push(s);
        }
    });
    // Nothing listens there.
    let closed_port = std::net::TcpListener::bind("127.0.0.4:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let up_port = up.addr.port();

    let rows = [
        Row {
            what: "allowed and answered",
            sandbox: "s-ok",
            url: format!("http://ok.test:{up_port}/x"),
            tunnel: false,
            status: 200,
            kind: "http",
            decision: "allow",
            reason: "none",
            outcome: "ok",
        },
        Row {
            what: "denied",
            sandbox: "s-deny",
            url: format!("http://unlisted.test:{up_port}/x"),
            tunnel: false,
            status: 403,
            kind: "http",
            decision: "deny",
            reason: "no_rule",
            outcome: "ok",
        },
        Row {
            what: "upstream refused the connection",
            sandbox: "s-refused",
            url: format!("http://closed.test:{closed_port}/x"),
            tunnel: false,
            status: 502,
            kind: "http",
            decision: "allow",
            reason: "connect_failed",
            outcome: "error",
        },
        Row {
            what: "upstream never answered",
            sandbox: "s-timeout",
            url: format!("http://stall.test:{stall_port}/x"),
            tunnel: false,
            status: 504,
            kind: "http",
            decision: "allow",
            reason: "upstream_timeout",
            outcome: "error",
        },
        Row {
            what: "tunnel to an upstream that refused",
            sandbox: "s-tunnel",
            url: format!("https://tunnel.test:{closed_port}/x"),
            tunnel: true,
            status: 502,
            kind: "connect",
            decision: "allow",
            reason: "connect_failed",
            outcome: "error",
        },
        Row {
            what: "approval denied",
            sandbox: "s-ask",
            url: format!("http://ask.test:{up_port}/x"),
            tunnel: false,
            status: 403,
            kind: "http",
            decision: "deny",
            reason: "approval_denied",
            outcome: "ok",
        },
    ];

    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let (proxy, admin_port) = (free_port(), free_port());
    let mut sandboxes = String::new();
    for s in rows.iter().map(|r| r.sandbox).chain(["s-rate"]) {
        sandboxes.push_str(&format!(
            "  - {{ id: {s}, user: u-{s}, token_sha256: {}, policy: web }}\n",
            hash(&format!("t-{s}"))
        ));
    }
    let yaml = format!(
        "listen: {{ proxy: \"127.0.0.1:{proxy}\", admin: \"127.0.0.1:{admin_port}\" }}\n\
         control: {{ admin_token: {{ file: {d}/admin-token }} }}\n\
         audit: {{ path: {d}/audit.jsonl }}\nca: {{ dir: {d}/cas }}\n\
         network:\n  allow_cidrs: [\"127.0.0.0/8\"]\n  hosts: {{ ok.test: 127.0.0.2, ask.test: 127.0.0.2, \
         unlisted.test: 127.0.0.2, closed.test: 127.0.0.4, tunnel.test: 127.0.0.4, stall.test: 127.0.0.3 }}\n\
         timeouts: {{ connect: 2s, upstream_headers: 1s }}\n\
         approval: {{ timeout: 30s }}\n\
         limits: {{ per_sandbox: {{ requests: {{ per_second: 1, burst: 2 }} }} }}\n\
         sandboxes:\n{sandboxes}\
         policies:\n  web:\n    allow:\n\
         \x20     - {{ host: ok.test, ports: [{up_port}] }}\n\
         \x20     - {{ host: closed.test, ports: [{closed_port}] }}\n\
         \x20     - {{ host: stall.test, ports: [{stall_port}] }}\n\
         \x20     - {{ host: tunnel.test, ports: [{closed_port}], tls: tunnel }}\n\
         \x20     - {{ host: ask.test, ports: [{up_port}], action: ask }}\n"
    );
    let config = dir.path().join("cordon.yaml");
    std::fs::write(&config, yaml).unwrap();
    let audit = dir.path().join("audit.jsonl");
    let mut child = spawn_cordon(&config, proxy, &[]).await;
    let admin = SocketAddr::from(([127, 0, 0, 1], admin_port));
    // The proxy port answers before the admin API does: wait for that too.
    let mut ready = false;
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(admin).await.is_ok() {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ready, "the admin API never answered");
    let token = crate::rigs::control::token(dir.path());

    let compare = |what: &str, record: &Value, labels: &BTreeMap<String, String>, row: (&str, &str, &str, &str)| {
        let (kind, decision, reason, outcome) = row;
        let expected: BTreeMap<String, String> = [
            ("kind", kind),
            ("decision", decision),
            ("outcome", outcome),
            ("reason", reason),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(labels, &expected, "{what}: the metric's labels; the record: {record}");
        // The record says the same.
        assert_eq!(record["kind"], kind, "{what}: {record}");
        assert_eq!(record["decision"], decision, "{what}: {record}");
        assert_eq!(record["reason"].as_str().unwrap_or("none"), reason, "{what}: {record}");
        assert_eq!(
            record["error"].is_string() && decision != "deny",
            outcome == "error",
            "{what}: {record}"
        );
    };

    for row in &rows {
        let before = requests_total(admin).await;
        let curl = request(proxy, row.sandbox, &row.url, row.tunnel);
        if row.reason == "approval_denied" {
            deny_the_pending_approval(admin, token.trim()).await;
        }
        assert_eq!(status(curl).await, row.status, "{}", row.what);
        let record = record_of(&audit, row.sandbox, 1).await;
        assert_eq!(record["status"], row.status, "{}: {record}", row.what);
        let labels = the_one_increment(&before, &requests_total(admin).await);
        compare(
            row.what,
            &record,
            &labels,
            (row.kind, row.decision, row.reason, row.outcome),
        );
    }

    // Rate limited: allowed until the burst is spent, then 429; each request one record and one increment.
    let mut sent = 0;
    loop {
        assert!(sent < 10, "never rate limited");
        let before = requests_total(admin).await;
        let got = status(request(proxy, "s-rate", &format!("http://ok.test:{up_port}/x"), false)).await;
        sent += 1;
        let record = record_of(&audit, "s-rate", sent).await;
        let labels = the_one_increment(&before, &requests_total(admin).await);
        if got == 429 {
            compare("rate limited", &record, &labels, ("http", "deny", "sandbox_rate", "ok"));
            break;
        }
        assert_eq!(got, 200);
        compare("within the rate", &record, &labels, ("http", "allow", "none", "ok"));
    }
    child.kill().unwrap();
    child.timed_wait().unwrap();
}
