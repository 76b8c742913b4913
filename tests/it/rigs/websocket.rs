//! The upstream side of the frame tests (`websocket/frames.rs`): WebSocket endpoints of the leaky upstream that
//! work on raw frames, written and read with tungstenite's frame header, so that what cordon relays is seen
//! frame by frame, not as messages a library joined. `/ws-sink` records the payload of every frame it gets
//! (a frame cut short included) as it comes; `/ws-split` sends the secret split over two frames at
//! every offset, raw and base64, as text and binary, with and without a ping between the two, then `done`.
//! Also a WebSocket server over TLS that echoes (`big N`: N bytes in one message), and the next message
//! a client gets.

use std::io::Cursor;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Control, Data, OpCode};
use tokio_tungstenite::tungstenite::protocol::frame::{Frame, FrameHeader};

use crate::rigs::leaky::{Body, Leaks};
use crate::rigs::upstreams::Seen;

/// A WebSocket server over TLS: echoes what it gets, except `big N`, answered with N bytes in one message. Counts
/// the messages it received.
pub(crate) async fn wss_server(
    tls: Arc<rustls::ServerConfig>,
) -> (std::net::SocketAddr, Arc<std::sync::atomic::AtomicUsize>) {
    let listener = TcpListener::bind(("127.0.0.2", 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let got = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = got.clone();
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (acceptor, counter) = (acceptor.clone(), counter.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else { return };
                let Ok(mut ws) = tokio_tungstenite::accept_async(tls).await else {
                    return;
                };
                while let Some(Ok(msg)) = ws.next().await {
                    if !(msg.is_text() || msg.is_binary()) {
                        continue;
                    }
                    counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let reply = match msg.to_text().ok().and_then(|t| t.strip_prefix("big ")) {
                        Some(n) => Message::binary(vec![b'x'; n.parse().unwrap()]),
                        None => msg,
                    };
                    if ws.send(reply).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, got)
}

/// The next message the sandbox gets, within five seconds.
pub(crate) async fn next<S: StreamExt<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin>(
    s: &mut S,
) -> Message {
    tokio::time::timeout(Duration::from_secs(5), s.next())
        .await
        .expect("an answer in time")
        .expect("a message")
        .expect("no error")
}

/// The spellings of `secret` that `/ws-split` splits: as it is, and in base64.
pub(crate) fn split_spellings(secret: &str) -> Vec<String> {
    vec![
        secret.to_string(),
        base64::engine::general_purpose::STANDARD.encode(secret),
    ]
}

/// The messages `/ws-split` sends, in order: (text, split at, a ping between the two frames), each split
/// spelling of `secret` at every offset, as text and binary.
pub(crate) fn split_cases(secret: &str) -> Vec<(bool, String, usize, bool)> {
    let mut cases = Vec::new();
    for spelling in split_spellings(secret) {
        for at in 0..=spelling.len() {
            for text in [true, false] {
                for ping in [false, true] {
                    cases.push((text, spelling.clone(), at, ping));
                }
            }
        }
    }
    cases
}

/// The frames of one `/ws-split` message: `before <spelling> after`, cut `at` bytes into the spelling.
pub(crate) fn split_frames(text: bool, spelling: &str, at: usize, ping: bool) -> Vec<Frame> {
    let whole = format!("before {spelling} after");
    let cut = "before ".len() + at;
    let kind = if text { Data::Text } else { Data::Binary };
    let mut frames = vec![Frame::message(
        whole.as_bytes()[..cut].to_vec(),
        OpCode::Data(kind),
        false,
    )];
    if ping {
        frames.push(Frame::ping(b"between".to_vec()));
    }
    frames.push(Frame::message(
        whole.as_bytes()[cut..].to_vec(),
        OpCode::Data(Data::Continue),
        true,
    ));
    frames
}

/// The payloads of the frames in `raw` (unmasked), joined, the last frame's as far as it came.
fn payloads(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut cursor = Cursor::new(raw);
    while let Ok(Some((header, length))) = FrameHeader::parse(&mut cursor) {
        let start = cursor.position() as usize;
        let end = (start + length as usize).min(raw.len());
        let data = &raw[start..end];
        let is_data = matches!(header.opcode, OpCode::Data(_)) || header.opcode == OpCode::Control(Control::Ping);
        if is_data {
            match header.mask {
                Some(key) => out.extend(data.iter().enumerate().map(|(i, b)| b ^ key[i % 4])),
                None => out.extend_from_slice(data),
            }
        }
        cursor.set_position(end as u64);
        if end == raw.len() {
            break;
        }
    }
    out
}

/// A 101 to `/ws-sink` or `/ws-split`, and the task that serves it.
pub(crate) fn upstream(req: Request<Incoming>, secret: String, leaks: Leaks) -> Response<Body> {
    let key = req
        .headers()
        .get("sec-websocket-key")
        .cloned()
        .unwrap_or_else(|| "none".parse().unwrap());
    let accept = derive_accept_key(key.as_bytes());
    let path = req.uri().path().to_string();
    tokio::spawn(async move {
        let Ok(upgraded) = hyper::upgrade::on(req).await else {
            return;
        };
        let mut io = hyper_util::rt::TokioIo::new(upgraded);
        if path == "/ws-split" {
            let mut out = Vec::new();
            for (text, spelling, at, ping) in split_cases(&secret) {
                for frame in split_frames(text, &spelling, at, ping) {
                    frame.format(&mut out).unwrap();
                }
            }
            Frame::message(b"done".to_vec(), OpCode::Data(Data::Text), true)
                .format(&mut out)
                .unwrap();
            let _ = io.write_all(&out).await;
            let _ = io.flush().await;
        }
        // What came so far is in `leaks` after every read, and marked ended once the connection ends.
        let at = {
            let mut seen = leaks.seen.lock().unwrap();
            seen.push(Seen {
                method: "WEBSOCKET".into(),
                uri: path,
                headers: Vec::new(),
                body: Vec::new(),
            });
            seen.len() - 1
        };
        let mut raw = Vec::new();
        let mut buf = vec![0; 1 << 16];
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
        while let Ok(Ok(n)) = tokio::time::timeout_at(deadline, io.read(&mut buf)).await {
            if n == 0 {
                break;
            }
            raw.extend_from_slice(&buf[..n]);
            leaks.seen.lock().unwrap()[at].body = payloads(&raw);
        }
        leaks.seen.lock().unwrap()[at].method = "WEBSOCKET-ENDED".into();
    });
    Response::builder()
        .status(101)
        .header("connection", "upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-accept", accept)
        .body(Full::new(Bytes::new()).boxed())
        .unwrap()
}
