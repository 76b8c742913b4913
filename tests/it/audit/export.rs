//! Audit records shipped as OpenTelemetry logs over OTLP/HTTP, through the binary, to a receiver that decodes
//! them with the official protobuf definitions (tests/servers/otlp_logs_receiver.py, PyPI
//! `opentelemetry-proto`): every line arrives, in order, with its attributes, across a collector outage and a
//! restart of cordon while the collector is down.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::rigs::audit::{Cordon, records, setup};
use crate::rigs::process::Signal;
use crate::rigs::process::spawn_cordon;
use crate::rigs::upstreams::upstream;
use crate::rigs::wait::TimedChild;

/// The receiver, writing what it decoded to `out`, on `port` (0: any); the child and its port.
fn receiver(out: &Path, port: u16, answer: Option<u16>) -> (Child, u16) {
    receiver_with(
        out,
        port,
        answer
            .map(|s| vec!["--answer".to_string(), s.to_string()])
            .unwrap_or_default(),
    )
}

/// The receiver with more arguments.
fn receiver_with(out: &Path, port: u16, args: Vec<String>) -> (Child, u16) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers/otlp_logs_receiver.py");
    let mut cmd = Command::new("python3");
    cmd.arg(script).arg(out).arg(port.to_string()).args(args);
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 with opentelemetry-proto (pip install opentelemetry-proto; .ci/run does)");
    let line = crate::rigs::wait::first_line(
        &mut child,
        "the OTLP receiver (python3 tests/servers/otlp_logs_receiver.py)",
        std::time::Duration::from_secs(60),
    );
    let port = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("the receiver did not start: {line:?}"))
        .parse()
        .unwrap();
    (child, port)
}

fn stop(mut child: Child) {
    let _ = child.kill();
    let _ = child.timed_wait();
}

/// What the receiver got, one decoded log record each, in arrival order. The receiver may be writing while
/// this reads: a last line without its newline is not complete yet and is left for the next look.
fn received(out: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(out).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The value of one metric line of cordon's `/metrics`.
fn metric(metrics: &str, name: &str) -> u64 {
    let prefix = format!("{name} ");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("no {name}: {metrics}"))
        .parse()
        .unwrap()
}

/// Wait until cordon has counted at least `n` lines as sent: the receiver writes a batch before it answers, so
/// seeing the lines is not yet cordon knowing they arrived (a receiver stopped in between gets them again).
async fn until_sent(c: &Cordon, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, metrics) = c.admin("/metrics").await;
        let sent = metric(&metrics, "cordon_audit_export_records_total{outcome=\"sent\"}");
        if sent >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "only {sent} lines counted as sent: {metrics}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every line of the audit file, by seq.
fn audit_lines(audit: &Path) -> BTreeMap<i64, String> {
    std::fs::read_to_string(audit)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["seq"].as_i64().unwrap(), l.to_string())
        })
        .collect()
}

/// Wait until the receiver has every line of the audit file up to `last_seq`; what it got.
async fn until_received(out: &Path, last_seq: i64, within: Duration) -> Vec<Value> {
    let deadline = Instant::now() + within;
    loop {
        let got = received(out);
        if got
            .iter()
            .any(|r| r["attributes"]["cordon.seq"].as_i64() == Some(last_seq))
        {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "the receiver never got seq {last_seq}; it has {} records",
            got.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn requests(c: &Cordon, from: usize, n: usize) {
    let mut conn = None;
    for i in from..from + n {
        assert_eq!(c.get(&mut conn, &format!("/r/{i}")).await.map(|r| r.0), Some(200));
    }
}

fn otlp(port: u16, spool: &Path) -> String {
    format!(
        "export: {{ otlp: {{ endpoint: \"http://127.0.0.1:{port}/v1/logs\", batch: 50, interval: 100ms, \
         headers: {{ authorization: {{ env: OTLP_TOKEN }} }}, spool: {{ path: {} }} }} }},",
        spool.display()
    )
}

async fn start(c: &Cordon) -> Child {
    spawn_cordon(&c.config, c.proxy, &[("OTLP_TOKEN", "Bearer otlp-t0ken")]).await
}

#[tokio::test(flavor = "multi_thread")]
async fn every_line_reaches_the_collector_in_order_across_an_outage_and_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("received.jsonl");
    let audit = d.join("audit.jsonl");
    let spool: PathBuf = d.join("spool");
    let (rx, port) = receiver(&out, 0, None);
    let up = upstream("127.0.0.2").await;
    let c = setup(d, &audit, up.addr.port(), &otlp(port, &spool));
    let child = start(&c).await;

    // The collector is up: records arrive within moments.
    requests(&c, 0, 100).await;
    let last = *audit_lines(&audit).keys().last().unwrap();
    until_received(&out, last, Duration::from_secs(10)).await;
    until_sent(&c, 100).await;

    // The collector goes away; cordon serves on, the lines wait in the spool, the failures are counted.
    stop(rx);
    requests(&c, 100, 300).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (_, metrics) = c.admin("/metrics").await;
    let value = |name: &str| metric(&metrics, name);
    assert!(value("cordon_audit_export_backlog_bytes") > 0, "{metrics}");
    assert!(value("cordon_audit_export_failures_total") > 0, "{metrics}");
    assert!(
        value("cordon_audit_export_records_total{outcome=\"sent\"}") >= 100,
        "{metrics}"
    );
    // cordon restarts while the collector is still down: what waits is kept for the next run.
    let stopped = crate::rigs::process::signal_and_wait(child, Signal::SIGTERM).await;
    assert!(stopped.status.success(), "{}", String::from_utf8_lossy(&stopped.stderr));
    let stderr = String::from_utf8_lossy(&stopped.stderr);
    assert!(stderr.contains("cannot export audit records"), "{stderr}");
    let child = start(&c).await;
    requests(&c, 400, 50).await;

    // The collector comes back on its port: everything arrives, in order, each at least once.
    let (rx, _) = receiver(&out, port, None);
    let lines = audit_lines(&audit);
    let last = *lines.keys().last().unwrap();
    let got = until_received(&out, last, Duration::from_secs(40)).await;
    let stopped = crate::rigs::process::signal_and_wait(child, Signal::SIGTERM).await;
    assert!(stopped.status.success());
    stop(rx);

    let mut seen = BTreeMap::new();
    let mut highest = -1;
    for r in &got {
        let seq = r["attributes"]["cordon.seq"].as_i64().unwrap();
        if seen.contains_key(&seq) {
            continue; // at-least-once: a repeat is recognised by its seq
        }
        assert!(seq > highest, "seq {seq} arrived after {highest}: not in order");
        highest = seq;
        seen.insert(seq, r.clone());
    }
    for (seq, line) in lines.range(..=last) {
        let r = seen
            .get(seq)
            .unwrap_or_else(|| panic!("seq {seq} never arrived: {line}"));
        assert_eq!(
            r["body"].as_str(),
            Some(line.as_str()),
            "the body is the line as written"
        );
        assert_eq!(r["authorization"], "Bearer otlp-t0ken");
        assert_eq!(r["resource"]["service.name"], "cordon");
        assert_eq!(r["scope"], "cordon.audit");
    }
    // A request's record carries who, what and the decision as attributes.
    let served = records(&audit);
    assert_eq!(served.iter().filter(|r| r["status"] == 200).count(), 450);
    let one = seen
        .values()
        .find(|r| r["attributes"]["url.path"] == "/r/250")
        .expect("the record of a request sent during the outage");
    let a = &one["attributes"];
    assert_eq!(
        (&a["cordon.sandbox"], &a["cordon.user"], &a["cordon.decision"]),
        (&Value::from("sb1"), &Value::from("alice"), &Value::from("allow"))
    );
    assert_eq!(a["http.response.status_code"], 200);
    assert_eq!(one["event_name"], "cordon.audit.http");
    assert_eq!(one["severity"], "INFO");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denial_is_shipped_with_its_reason_and_a_collector_answering_503_is_retried() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("received.jsonl");
    let audit = d.join("audit.jsonl");
    // A collector that is overloaded: every export answered 503.
    let (rx, port) = receiver(&out, 0, Some(503));
    let up = upstream("127.0.0.2").await;
    let c = setup(d, &audit, up.addr.port(), &otlp(port, &d.join("spool")));
    let child = start(&c).await;
    let mut conn = None;
    let denied = format!("/r/{}", 1);
    // A host no rule allows: 403, a deny record.
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", c.proxy)).await.unwrap();
    let req = format!(
        "GET http://unlisted.test/x HTTP/1.1\r\nHost: unlisted.test\r\n{}\r\n",
        crate::rigs::client::auth("sb1", "tok1")
    );
    tokio::io::AsyncWriteExt::write_all(&mut s, req.as_bytes())
        .await
        .unwrap();
    assert_eq!(crate::rigs::client::read_response(&mut s).await.unwrap().status, 403);
    assert_eq!(c.get(&mut conn, &denied).await.map(|r| r.0), Some(200));
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(received(&out).is_empty());
    // It recovers: the same port, answering 200 now.
    stop(rx);
    let (rx, _) = receiver(&out, port, None);
    let last = *audit_lines(&audit).keys().last().unwrap();
    let got = until_received(&out, last, Duration::from_secs(40)).await;
    let deny = got
        .iter()
        .find(|r| r["attributes"]["cordon.decision"] == "deny")
        .expect("the denial was shipped");
    assert_eq!(deny["attributes"]["cordon.reason"], "no_rule");
    assert_eq!(deny["attributes"]["server.address"], "unlisted.test");
    assert_eq!(deny["severity"], "WARN");
    let stopped = crate::rigs::process::signal_and_wait(child, Signal::SIGTERM).await;
    assert!(stopped.status.success());
    stop(rx);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_collector_that_never_answers_does_not_hold_up_the_stop() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("received.jsonl");
    let audit = d.join("audit.jsonl");
    let (rx, port) = receiver_with(&out, 0, vec!["--stall".into()]);
    let up = upstream("127.0.0.2").await;
    // A long request timeout: only the stop's own wait may end the hanging send.
    let otlp = otlp(port, &d.join("spool")).replace("interval: 100ms,", "interval: 100ms, timeout: 60s,");
    let c = setup(d, &audit, up.addr.port(), &otlp);
    let child = start(&c).await;
    requests(&c, 0, 5).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let began = Instant::now();
    let stopped = crate::rigs::process::signal_and_wait(child, Signal::SIGTERM).await;
    stop(rx);
    assert!(stopped.status.success(), "{}", String::from_utf8_lossy(&stopped.stderr));
    assert!(
        began.elapsed() < Duration::from_secs(20),
        "the stop waited {:?} on a collector that never answers",
        began.elapsed()
    );
    // The exporter itself ended within the stop's wait (it was not left behind mid-send).
    let stderr = String::from_utf8_lossy(&stopped.stderr);
    assert!(!stderr.contains("did not finish in time"), "{stderr}");
    // What was not taken waits in the spool for the next start.
    let spooled: usize = std::fs::read_dir(d.join("spool"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap().lines().count())
        .sum();
    assert!(spooled >= 5, "{spooled} lines in the spool");
}
