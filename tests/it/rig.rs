//! Test rig: upstream servers on 127.x addresses, a proxy with a captured audit log, and a raw client.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use cordon::audit::{Kind, Sink, Verdict};
use cordon::config::Config;
use cordon::state::ProxyState;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

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
    pub count: Option<u64>,
    pub original_dst: Option<String>,
    pub original_dst_differs: Option<bool>,
    pub qtype: Option<String>,
    pub set_cookie_stripped: Option<Vec<String>>,
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

/// Audit records captured in memory, each through its JSON line.
#[derive(Default, Clone)]
pub(crate) struct Capture(pub Arc<Mutex<Vec<Record>>>);

impl Sink for Capture {
    fn write(&self, record: &cordon::audit::Record) {
        let line = serde_json::to_string(record).unwrap();
        let read: Record = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        self.0.lock().unwrap().push(read);
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

/// What an upstream saw of one request.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub method: String,
    pub uri: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Seen {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// An HTTP/1.1 upstream that counts accepted connections and records requests.
pub(crate) struct Upstream {
    pub addr: SocketAddr,
    pub accepts: Arc<AtomicUsize>,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

impl Upstream {
    pub(crate) fn accepted(&self) -> usize {
        self.accepts.load(Ordering::SeqCst)
    }
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// Start an upstream on `ip:0`. `/slow` answers after 300 ms; `/big` sends 100 000 bytes; anything else
/// answers `hello from upstream` with a `Proxy-Authenticate` header cordon must strip.
pub(crate) async fn upstream(ip: &str) -> Upstream {
    upstream_on(TcpListener::bind((ip, 0)).await.unwrap())
}

/// The same upstream on a listener already bound.
pub(crate) fn upstream_on(listener: TcpListener) -> Upstream {
    let addr = listener.local_addr().unwrap();
    let accepts = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (a, s) = (accepts.clone(), seen.clone());
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            a.fetch_add(1, Ordering::SeqCst);
            let svc = upstream_service(s.clone());
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    Upstream { addr, accepts, seen }
}

/// The upstream's request handler (HTTP/1.1 and h2 alike), recording what it saw.
pub(crate) fn upstream_service(
    s: Arc<Mutex<Vec<Seen>>>,
) -> impl hyper::service::Service<Request<Incoming>, Response = Response<TestBody>, Error = Infallible, Future: Send>
+ Clone
+ Send {
    service_fn(move |req: Request<Incoming>| {
        let s = s.clone();
        async move {
            if let Some(special) = special(req.uri().path()) {
                return Ok(special);
            }
            if req.uri().path() == "/echo" {
                // Echoes the Authorization it received, as an upstream that reflects credentials would.
                let auth = req
                    .headers()
                    .get("authorization")
                    .cloned()
                    .unwrap_or(http::HeaderValue::from_static(""));
                let resp = Response::builder()
                    .header("content-type", "text/plain")
                    .header("x-echo", auth.clone())
                    .body(Full::new(Bytes::copy_from_slice(auth.as_bytes())).boxed())
                    .unwrap();
                return Ok(resp);
            }
            let version = format!("{:?}", req.version());
            let (parts, body) = req.into_parts();
            let body = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
            s.lock().unwrap().push(Seen {
                method: parts.method.to_string(),
                uri: parts.uri.to_string(),
                headers: parts
                    .headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
                    .collect(),
                body: body.to_vec(),
            });
            let text: Bytes = match parts.uri.path() {
                "/slow" => {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    Bytes::from_static(b"slow hello\n")
                }
                "/big" => Bytes::from(vec![b'x'; 100_000]),
                "/version" => Bytes::from(version),
                _ => Bytes::from_static(b"hello from upstream\n"),
            };
            let resp = Response::builder()
                .header("proxy-authenticate", "Basic realm=\"upstream\"")
                .header("x-upstream", "1")
                .body(Full::new(text).boxed())
                .unwrap();
            Ok::<_, Infallible>(resp)
        }
    })
}

/// Response bodies of the test upstreams.
pub(crate) type TestBody = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// Opens the gate `/stream` waits on before its last chunk.
pub(crate) static STREAM_GATE: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// `/stream`: one chunk, then the last only after `STREAM_GATE` is opened (a proxy that buffered whole
/// bodies would never deliver the first); `/trailers`: a body followed by a trailer field.
fn special(path: &str) -> Option<Response<TestBody>> {
    use http_body_util::StreamBody;
    use hyper::body::Frame;
    let frames: Vec<Frame<Bytes>> = match path {
        "/redirect" => {
            // A redirect to another host: cordon passes it back and follows nothing.
            let resp = Response::builder()
                .status(307)
                .header("location", "https://allowed.test/landing")
                .body(BodyExt::boxed(Full::new(Bytes::from_static(b"moved\n"))))
                .ok()?;
            return Some(resp);
        }
        "/trailers" => {
            let mut t = http::HeaderMap::new();
            t.insert("x-checksum", http::HeaderValue::from_static("abc123"));
            vec![Frame::data(Bytes::from_static(b"with trailers\n")), Frame::trailers(t)]
        }
        "/stream" => {
            let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, Infallible>>(4);
            tokio::spawn(async move {
                let _ = tx.send(Ok(Frame::data(Bytes::from_static(b"first\n")))).await;
                STREAM_GATE.notified().await;
                let _ = tx.send(Ok(Frame::data(Bytes::from_static(b"last\n")))).await;
            });
            let body = StreamBody::new(tokio_stream_from(rx));
            return Some(Response::new(BodyExt::boxed(body)));
        }
        _ => return None,
    };
    let stream = futures_util::stream::iter(frames.into_iter().map(Ok::<_, Infallible>));
    Some(Response::new(BodyExt::boxed(StreamBody::new(stream))))
}

fn tokio_stream_from<T>(mut rx: tokio::sync::mpsc::Receiver<T>) -> impl futures_util::Stream<Item = T> {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// A TCP echo server (for tunnels), counting accepts.
pub(crate) async fn echo(ip: &str) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind((ip, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepts = Arc::new(AtomicUsize::new(0));
    let a = accepts.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            a.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let (mut r, mut w) = stream.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    (addr, accepts)
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
    let done = tokio::spawn(cordon::server::run(listener, state, async move {
        let _ = rx.await;
    }));
    Proxy {
        addr,
        audit,
        stop: Some(tx),
        done: Some(done),
    }
}

pub(crate) use crate::ports::free_port;

/// `Proxy-Authorization` header line for `id:token`.
pub(crate) fn auth(id: &str, token: &str) -> String {
    use base64::Engine;
    format!(
        "Proxy-Authorization: Basic {}\r\n",
        base64::engine::general_purpose::STANDARD.encode(format!("{id}:{token}"))
    )
}

/// The hex SHA-256 of a token.
pub(crate) fn hash(token: &str) -> String {
    cordon::identity::hash_token(token)
}

/// A parsed response.
#[derive(Debug)]
pub(crate) struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Read one response (head + Content-Length body, or to EOF without one) from `stream`.
pub(crate) async fn read_response(stream: &mut TcpStream) -> Option<Resp> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut parsed = httparse::Response::new(&mut headers);
        if let Ok(httparse::Status::Complete(len)) = parsed.parse(&buf) {
            let status = parsed.code.unwrap_or(0);
            let headers: Vec<(String, String)> = parsed
                .headers
                .iter()
                .map(|h| {
                    (
                        h.name.to_ascii_lowercase(),
                        String::from_utf8_lossy(h.value).into_owned(),
                    )
                })
                .collect();
            let cl = headers
                .iter()
                .find(|(k, _)| k == "content-length")
                .and_then(|(_, v)| v.parse::<usize>().ok());
            let mut body = buf[len..].to_vec();
            match cl {
                Some(n) => {
                    while body.len() < n {
                        let got = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut chunk))
                            .await
                            .ok()?
                            .ok()?;
                        if got == 0 {
                            break;
                        }
                        body.extend_from_slice(&chunk[..got]);
                    }
                }
                None => {
                    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut body)).await;
                }
            }
            return Some(Resp { status, headers, body });
        }
        let got = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut chunk))
            .await
            .ok()?
            .ok()?;
        if got == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..got]);
    }
}

/// Read the head of a response to CONNECT (a 2xx has no body; the tunnel starts right after).
pub(crate) async fn read_connect_response(stream: &mut TcpStream) -> u16 {
    read_head(stream).await.status
}

/// The status line and headers of a response, without waiting for a body (a 200 to CONNECT has none).
pub(crate) async fn read_head(stream: &mut TcpStream) -> Resp {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut byte))
            .await
            .unwrap()
            .unwrap();
        assert!(
            n == 1,
            "closed before the end of the response head: {}",
            String::from_utf8_lossy(&buf)
        );
        buf.push(byte[0]);
    }
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut parsed = httparse::Response::new(&mut headers);
    parsed.parse(&buf).unwrap();
    Resp {
        status: parsed.code.unwrap(),
        headers: parsed
            .headers
            .iter()
            .map(|h| (h.name.to_string(), String::from_utf8_lossy(h.value).into_owned()))
            .collect(),
        body: Vec::new(),
    }
}

/// Open a connection to the proxy, send `raw`, read one response.
pub(crate) async fn send(proxy: SocketAddr, raw: &str) -> Resp {
    let mut s = TcpStream::connect(proxy).await.unwrap();
    s.write_all(raw.as_bytes()).await.unwrap();
    read_response(&mut s).await.expect("a response")
}

/// Whether the peer closes `stream` (EOF within a short wait; anything sent before it, e.g. a TLS alert, is read).
pub(crate) async fn closed(stream: &mut TcpStream) -> bool {
    closed_within(stream, Duration::from_secs(3)).await
}

/// Whether the peer closes `stream` (plain or TLS) within `limit`, reading whatever comes before.
pub(crate) async fn closed_within<S: tokio::io::AsyncRead + Unpin>(stream: &mut S, limit: Duration) -> bool {
    let mut b = [0u8; 1024];
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut b)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
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
