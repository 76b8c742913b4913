//! A proxy in process with its audit log captured (each record read back through the JSON line cordon
//! writes), and the configuration the in-process tests run it with.

use std::net::SocketAddr;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cordon::audit::{Kind, Sink, Verdict};
use cordon::config::Config;
use cordon::state::ProxyState;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::rigs::client::hash;
use crate::rigs::upstreams::{Upstream, echo, upstream};

/// An audit record as a reader of the audit log sees it: the JSON line cordon writes, read back.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Record {
    pub time: String,
    pub sandbox: Option<String>,
    pub user: Option<String>,
    pub client: String,
    pub kind: Kind,
    pub method: Option<String>,
    pub host: Option<String>,
    pub port: Option<u16>,
    pub path: Option<String>,
    pub decision: Verdict,
    pub reason: Option<String>,
    pub policy: Option<String>,
    pub rule: Option<usize>,
    pub dialled: Option<String>,
    pub credentials: Option<Vec<String>>,
    pub status: Option<u16>,
    pub bytes_up: u64,
    pub bytes_down: u64,
    pub duration_ms: f64,
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<String>,
    pub approval: Option<ApprovalRecord>,
    /// The access request the sandbox filed or read at `access.cordon.internal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access: Option<serde_json::Value>,
    pub count: Option<u64>,
    pub original_dst: Option<String>,
    pub original_dst_differs: Option<bool>,
    pub qtype: Option<String>,
    pub set_cookie_stripped: Option<Vec<String>>,
    /// `admin` records: the action, principal, via, roles and detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin: Option<serde_json::Value>,
    /// A model API's exchange: the model, its tokens and cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<serde_json::Value>,
}

/// The approval part of a record.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApprovalRecord {
    pub id: String,
    pub outcome: String,
    pub by: Option<String>,
    pub scope: Option<String>,
    pub waited_ms: u64,
}

/// Audit records captured in memory, each through its JSON line. The records of admin actions (kind `admin`) are
/// kept apart ([`Capture::admin`]): what a test counts and searches with the other methods is traffic.
#[derive(Default, Clone)]
pub(crate) struct Capture(pub Arc<Mutex<Vec<Record>>>, pub Arc<Mutex<Vec<Record>>>);

impl Sink for Capture {
    fn write(&self, record: &cordon::audit::Record) {
        let line = serde_json::to_string(record).unwrap();
        let read: Record = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        if read.kind == Kind::Admin {
            self.1.lock().unwrap().push(read);
        } else {
            self.0.lock().unwrap().push(read);
        }
    }
}

impl Capture {
    /// The records so far.
    pub(crate) fn now(&self) -> Vec<Record> {
        self.0.lock().unwrap().clone()
    }

    /// Wait (up to 2 s) for a record that `pred` accepts: a record is emitted when its exchange ends, which
    /// may be just after the client has read the response.
    pub(crate) async fn wait_any(&self, pred: impl Fn(&Record) -> bool) -> Option<Record> {
        for _ in 0..200 {
            if let Some(r) = self.0.lock().unwrap().iter().find(|r| pred(r)) {
                return Some(r.clone());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        None
    }

    /// Wait (up to 2 s) for an admin record that `pred` accepts.
    pub(crate) async fn wait_admin(&self, pred: impl Fn(&Record) -> bool) -> Option<Record> {
        for _ in 0..200 {
            if let Some(r) = self.1.lock().unwrap().iter().find(|r| pred(r)) {
                return Some(r.clone());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        None
    }

    /// The admin records so far.
    pub(crate) fn admin(&self) -> Vec<Record> {
        self.1.lock().unwrap().clone()
    }

    /// Wait until at least `n` records arrived (records are emitted when bodies and tunnels end).
    pub(crate) async fn wait_for(&self, n: usize) -> Vec<Record> {
        for _ in 0..200 {
            {
                let recs = self.0.lock().unwrap();
                if recs.len() >= n {
                    return recs.clone();
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let recs = self.0.lock().unwrap().clone();
        panic!("expected {n} audit records, got {}: {recs:#?}", recs.len());
    }
}

/// A running proxy.
pub(crate) struct Proxy {
    pub addr: SocketAddr,
    pub audit: Capture,
    stop: Option<oneshot::Sender<()>>,
    pub done: Option<tokio::task::JoinHandle<()>>,
}

impl Proxy {
    /// Ask it to shut down (drain) and return the task to await.
    pub(crate) fn shutdown(&mut self) -> tokio::task::JoinHandle<()> {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        self.done.take().unwrap()
    }
}

/// Start cordon on 127.0.0.1:0 with this YAML.
pub(crate) async fn proxy(yaml: &str) -> Proxy {
    let config = Config::parse("test.yaml", yaml).unwrap_or_else(|e| panic!("test config: {e}"));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let audit = Capture::default();
    let state = ProxyState::new(config, Arc::new(audit.clone()), vec![addr])
        .await
        .unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    let done = tokio::spawn(cordon::proxy::server::run(listener, state, async move {
        let _ = rx.await;
    }));
    Proxy {
        addr,
        audit,
        stop: Some(tx),
        done: Some(done),
    }
}

/// The standard test configuration: an upstream on 127.0.0.2 and an echo server on 127.0.0.3, reached
/// through names in `network.hosts`, with the loopback range opened by `network.allow_cidrs`.
pub(crate) fn config(up: u16, echo: u16, extra_top: &str) -> String {
    format!(
        r#"
network:
  allow_cidrs: ["127.0.0.0/8"]
  hosts:
    allowed.test: 127.0.0.2
    api.allowed.test: 127.0.0.2
    unlisted.test: 127.0.0.2
    mixed.test: [127.0.0.2, 10.0.0.1]
    meta.test: 169.254.169.254
    metadata.google.internal: 127.0.0.2
    echo.test: 127.0.0.3
    pinned.test: 127.0.0.2
    untrusted.test: 127.0.0.4
timeouts:
  request_headers: 2s
  drain: 3s
{extra_top}
sandboxes:
  - id: sb1
    user: alice
    token_sha256: {h1}
    policy: web
  - id: sb2
    user: bob
    token_sha256: {h2}
    policy: everything
  - id: gw
    user: carol
    source_cidrs: ["127.0.0.5/32"]
    policy: web
policies:
  web:
    allow:
      - host: allowed.test
        ports: [{up}]
      - host: "*.allowed.test"
        ports: [{up}]
        methods: [GET]
        paths: ["/v1/**"]
      - host: mixed.test
        ports: [{up}]
      - host: meta.test
        ports: [{up}, 80]
      - host: metadata.google.internal
        ports: [{up}]
      - cidrs: ["127.0.0.2/32"]
        ports: [{up}]
      - host: echo.test
        ports: [{echo}]
      - host: pinned.test
        ports: [{up}]
        tls: tunnel
  everything:
    mode: report
    allow: []
"#,
        h1 = hash("tok1"),
        h2 = hash("tok2"),
    )
}

/// Upstream, echo server and proxy with the standard configuration.
pub(crate) async fn rig() -> (Upstream, (SocketAddr, Arc<AtomicUsize>), Proxy) {
    rig_with("").await
}

/// As `rig`, with extra top-level YAML (e.g. `limits:`).
pub(crate) async fn rig_with(extra_top: &str) -> (Upstream, (SocketAddr, Arc<AtomicUsize>), Proxy) {
    let up = upstream("127.0.0.2").await;
    let echo = echo("127.0.0.3").await;
    let p = proxy(&config(up.addr.port(), echo.0.port(), extra_top)).await;
    (up, echo, p)
}
