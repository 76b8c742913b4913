//! Upstream servers on 127.x addresses: an HTTP/1.1 upstream that counts connections and records what
//! reaches it (with paths that stream, redirect or send trailers), and a TCP echo for tunnels.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

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
