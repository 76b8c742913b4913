//! The leaky upstream of the secrets tests: it leaks every way an upstream can (echoes, stores, ranges,
//! compression, trailers, WebSocket frames, transformations, streams).

use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response};
use tokio::net::TcpListener;
use tokio::sync::Notify;

use crate::rigs::tls::{TestCa, serve_by_alpn};
use crate::rigs::upstreams::Seen;

pub(crate) type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// What the leaky upstream shares with the test.
#[derive(Clone, Default)]
pub(crate) struct Leaks {
    /// Every request it received.
    pub seen: Arc<Mutex<Vec<Seen>>>,
    /// What `PUT /store` stored.
    pub stored: Arc<Mutex<Vec<u8>>>,
    /// Opened by the test to let `/sse` send its second event.
    pub sse_gate: Arc<Notify>,
}

impl Leaks {
    /// Whether any request the upstream received carried `needle` anywhere (headers, path, body).
    pub(crate) fn saw(&self, needle: &str) -> bool {
        self.seen.lock().unwrap().iter().any(|s| {
            s.uri.contains(needle)
                || s.headers.iter().any(|(_, v)| v.contains(needle))
                || String::from_utf8_lossy(&s.body).contains(needle)
        })
    }
}

fn full(status: u16, headers: &[(&str, &str)], body: impl Into<Bytes>) -> Response<Body> {
    let mut b = Response::builder().status(status);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(Full::new(body.into()).boxed()).unwrap()
}

fn compressed(coding: &str, data: &[u8]) -> Vec<u8> {
    match coding {
        "gzip" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "deflate" => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "br" => {
            let mut out = Vec::new();
            {
                let mut e = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
                e.write_all(data).unwrap();
            }
            out
        }
        _ => zstd::encode_all(data, 3).unwrap(),
    }
}

/// The secret the request carried as `Authorization: Bearer ...` (what cordon injected), if any.
fn bearer(req: &Request<Incoming>) -> String {
    req.headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("no-secret")
        .to_string()
}

async fn handle(leaks: Leaks, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let secret = bearer(&req);
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let method = req.method().clone();
    let headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    let range = req.headers().get("range").map(|v| v.to_str().unwrap_or("").to_string());
    if path.starts_with("/ws-") {
        return Ok(crate::rigs::websocket::upstream(req, secret, leaks));
    }
    if path == "/ws" {
        return Ok(websocket(req, secret));
    }
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    leaks.seen.lock().unwrap().push(Seen {
        method: method.to_string(),
        uri: format!("{path}?{query}"),
        headers: headers.clone(),
        body: body.to_vec(),
    });
    let echo: String = headers.iter().map(|(k, v)| format!("{k}: {v}\n")).collect();
    Ok(match path.as_str() {
        "/echo" => full(200, &[("content-type", "text/plain"), ("x-echo", &secret)], echo),
        "/store" if method == hyper::Method::PUT => {
            *leaks.stored.lock().unwrap() = body.to_vec();
            full(201, &[], "stored\n")
        }
        "/store" => {
            let stored = leaks.stored.lock().unwrap().clone();
            match range.as_deref().and_then(|r| r.strip_prefix("bytes=")) {
                Some(r) => {
                    let (a, b) = r.split_once('-').unwrap();
                    let (a, b): (usize, usize) = (a.parse().unwrap(), b.parse().unwrap());
                    let b = b.min(stored.len() - 1);
                    let cr = format!("bytes {a}-{b}/{}", stored.len());
                    full(206, &[("content-range", &cr)], stored[a..=b].to_vec())
                }
                None => full(200, &[("accept-ranges", "bytes")], stored),
            }
        }
        "/compressed" => {
            let coding = query.strip_prefix("c=").unwrap_or("gzip");
            let data = compressed(coding, format!("{{\"echo\": \"{secret}\"}}\n").repeat(50).as_bytes());
            full(
                200,
                &[("content-encoding", coding), ("content-type", "application/json")],
                data,
            )
        }
        "/octet" => full(
            200,
            &[("content-type", "application/octet-stream")],
            format!("\0\x01{secret}\x02"),
        ),
        "/big" => {
            let mut data = vec![b'.'; 3 << 20];
            let at = (1 << 20) + 17;
            data[at..at + secret.len()].copy_from_slice(secret.as_bytes());
            full(200, &[("content-type", "text/plain")], data)
        }
        "/nonutf8" => {
            let mut value = b"\xfe\xff ".to_vec();
            value.extend_from_slice(secret.as_bytes());
            let mut resp = full(200, &[], "ok\n");
            resp.headers_mut()
                .insert("x-raw", hyper::header::HeaderValue::from_bytes(&value).unwrap());
            resp
        }
        "/transforms" => {
            let b64 = base64::engine::general_purpose::STANDARD.encode(format!("user:{secret}"));
            let json = serde_json::to_string(&serde_json::json!({"key": secret}))
                .unwrap()
                .replace('/', "\\/");
            let pct: String = form_urlencoded::byte_serialize(secret.as_bytes()).collect();
            let location = format!("https://elsewhere.test/cb?token={pct}");
            full(
                302,
                &[("location", &location), ("content-type", "application/json")],
                format!("{json}\n{b64}\n{}\n", hex::encode(&secret)),
            )
        }
        "/trailers" => {
            let mut trailers = hyper::HeaderMap::new();
            trailers.insert("x-echo", secret.parse().unwrap());
            let frames = vec![
                Ok::<_, Infallible>(Frame::data(Bytes::from_static(b"body\n"))),
                Ok(Frame::trailers(trailers)),
            ];
            Response::builder()
                .header("trailer", "x-echo")
                .body(StreamBody::new(futures_util::stream::iter(frames)).boxed())
                .unwrap()
        }
        "/names" => {
            // Header fields named by forms of the secret (over h2 when cordon negotiates it).
            let mut resp = full(200, &[("x-plain", "kept")], "ok\n");
            for name in crate::rigs::envelope::name_forms(&secret) {
                let name = hyper::header::HeaderName::from_bytes(name.as_bytes()).unwrap();
                resp.headers_mut()
                    .insert(name, hyper::header::HeaderValue::from_static("1"));
            }
            resp
        }
        "/encoded" => full(
            200,
            &[("content-type", "text/plain")],
            crate::rigs::encodings::encoded(query.strip_prefix("e=").unwrap_or("plain"), &secret),
        ),
        "/json" => json(&query, &secret),
        "/sse" => sse(leaks.sse_gate.clone(), secret),
        "/download" => download(
            secret,
            query.strip_prefix("mib=").and_then(|m| m.parse().ok()).unwrap_or(50),
        ),
        _ => full(200, &[], format!("{method} {path}\n")),
    })
}

/// `/json?e=FAMILY[&c=CODING][&sse=1]`: a JSON document holding the secret escaped by `FAMILY` (as server-sent
/// events when `sse`, compressed with `CODING` when given), sent a few bytes at a time with pauses between, so
/// that escapes straddle the chunks cordon reads.
fn json(query: &str, secret: &str) -> Response<Body> {
    let q: std::collections::HashMap<String, String> = form_urlencoded::parse(query.as_bytes()).into_owned().collect();
    let doc = crate::rigs::encodings::json_doc(&crate::rigs::encodings::json_escaped(&q["e"], secret));
    let sse = q.contains_key("sse");
    let text = if sse {
        format!("event: a\ndata: {doc}\n\ndata: {doc}\n\n")
    } else {
        doc
    };
    let coding = q.get("c").cloned();
    let data = match &coding {
        Some(c) => compressed(c, text.as_bytes()),
        None => text.into_bytes(),
    };
    let pieces: Vec<Bytes> = data.chunks(5).map(Bytes::copy_from_slice).collect();
    let stream = futures_util::stream::unfold(pieces.into_iter(), |mut pieces| async move {
        let piece = pieces.next()?;
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        Some((Ok::<_, Infallible>(Frame::data(piece)), pieces))
    });
    let mut b = Response::builder().header(
        "content-type",
        if sse { "text/event-stream" } else { "application/json" },
    );
    if let Some(c) = coding {
        b = b.header("content-encoding", c);
    }
    b.body(StreamBody::new(stream).boxed()).unwrap()
}

/// Two events: the first at once, the second when the test opens the gate; each carries the secret.
fn sse(gate: Arc<Notify>, secret: String) -> Response<Body> {
    let stream = futures_util::stream::unfold(0, move |n| {
        let (gate, secret) = (gate.clone(), secret.clone());
        async move {
            match n {
                0 => Some((Ok(Frame::data(Bytes::from(format!("data: first {secret}\n\n")))), 1)),
                1 => {
                    gate.notified().await;
                    Some((Ok(Frame::data(Bytes::from(format!("data: second {secret}\n\n")))), 2))
                }
                _ => None,
            }
        }
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(StreamBody::new(stream).boxed())
        .unwrap()
}

/// `mib` MiB of text, streamed in 64 KiB chunks, with the secret every 64 KiB, straddling chunk boundaries.
fn download(secret: String, mib: usize) -> Response<Body> {
    let chunk = 64 * 1024;
    let stream = futures_util::stream::unfold(0usize, move |i| {
        let secret = secret.clone();
        async move {
            (i < mib * 16).then(|| {
                let mut data = vec![b'-'; chunk];
                let at = chunk - secret.len() / 2;
                data[at..].copy_from_slice(&secret.as_bytes()[..secret.len() - secret.len() / 2]);
                data[..secret.len() / 2].copy_from_slice(&secret.as_bytes()[secret.len() - secret.len() / 2..]);
                (Ok(Frame::data(Bytes::from(data))), i + 1)
            })
        }
    });
    Response::builder().body(StreamBody::new(stream).boxed()).unwrap()
}

/// A WebSocket whose 101 echoes the secret in a header, whose first message is the secret, and which
/// echoes what it receives.
fn websocket(req: Request<Incoming>, secret: String) -> Response<Body> {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
    let key = req.headers().get("sec-websocket-key").cloned();
    let extensions = req.headers().get("sec-websocket-extensions").cloned();
    let Some(key) = key else {
        return full(400, &[], "not a websocket handshake\n");
    };
    let accept = derive_accept_key(key.as_bytes());
    let seen_extensions = extensions
        .map(|e| e.to_str().unwrap_or("").to_string())
        .unwrap_or_default();
    let echoed = secret_header(&secret);
    tokio::spawn(async move {
        let Ok(upgraded) = hyper::upgrade::on(req).await else {
            return;
        };
        let io = hyper_util::rt::TokioIo::new(upgraded);
        let mut ws = tokio_tungstenite::WebSocketStream::from_raw_socket(
            io,
            tokio_tungstenite::tungstenite::protocol::Role::Server,
            None,
        )
        .await;
        let _ = ws
            .send(Message::text(format!("hello {secret} ext=[{seen_extensions}]")))
            .await;
        while let Some(Ok(m)) = ws.next().await {
            if m.is_text() || m.is_binary() {
                let _ = ws.send(m).await;
            }
        }
    });
    Response::builder()
        .status(101)
        .header("connection", "upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-accept", accept)
        .header("x-echo", echoed)
        .body(Full::new(Bytes::new()).boxed())
        .unwrap()
}

fn secret_header(secret: &str) -> String {
    format!("token={secret}")
}

/// The leaky upstream (h2 and HTTP/1.1) on 127.0.0.5, with a certificate for `leaky.test` and `other.test`.
pub(crate) async fn leaky(ca: &TestCa) -> (SocketAddr, Leaks) {
    let listener = TcpListener::bind(("127.0.0.5", 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let leaks = Leaks::default();
    let acceptor = tokio_rustls::TlsAcceptor::from(ca.server_config(&["leaky.test", "other.test"]));
    let shared = leaks.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (acceptor, leaks) = (acceptor.clone(), shared.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else { return };
                let svc = hyper::service::service_fn(move |req| handle(leaks.clone(), req));
                serve_by_alpn(tls, svc).await;
            });
        }
    });
    (addr, leaks)
}
