//! A WebSocket inside an interception, relayed message by message once the upstream switched protocols:
//! what the sandbox sends is scanned like a request body (a placeholder or a secret it may not send closes
//! the WebSocket with 1008, policy violation), what the upstream sends has its destination's secrets masked
//! like a response body. Messages are whole (tungstenite joins fragmented frames), so a secret split over
//! frames is still one message; which is why a message, and a frame, may be no larger than
//! `limits.websocket_message` / `limits.websocket_frame` (16 MiB each by default): a larger one from either side
//! closes the WebSocket with 1009 (message too big) on both sides and is recorded as
//! `websocket_message_too_big`, so one WebSocket holds at most a few times that at once, and nothing once it
//! has closed.

use futures_util::{SinkExt, StreamExt};
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::error::CapacityError;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Bytes, Error, Message, Utf8Bytes};

use crate::error::TunnelEnd;
use crate::pipeline::WebSocketGuard;
use crate::session::lifetime::Stop;

/// Relay between the sandbox's and the upstream's upgraded connections until either closes, the tunnel
/// must end, or the sandbox sends what it may not; the WebSocket's audit record is written at the end.
pub(crate) async fn relay(client: Upgraded, upstream: Upgraded, guard: WebSocketGuard, stop: &Stop) {
    let record = guard.take_record();
    let (up, down) = match &record {
        Some(r) => r.counters(),
        None => Default::default(),
    };
    let config = WebSocketConfig::default()
        .max_message_size(Some(guard.max.0))
        .max_frame_size(Some(guard.max.1));
    let client = WebSocketStream::from_raw_socket(TokioIo::new(client), Role::Server, Some(config)).await;
    let upstream = WebSocketStream::from_raw_socket(TokioIo::new(upstream), Role::Client, Some(config)).await;
    let (mut to_client, mut from_client) = client.split();
    let (mut to_upstream, mut from_upstream) = upstream.split();
    let end = loop {
        tokio::select! {
            message = from_client.next() => {
                let message = match message {
                    Some(Ok(message)) => message,
                    Some(Err(Error::Capacity(e))) => {
                        break Some(too_big(&mut to_client, &mut to_upstream, "the sandbox", &e).await);
                    }
                    _ => break None,
                };
                up.fetch_add(message.len() as u64, std::sync::atomic::Ordering::Relaxed);
                if let Some(refusal) = refused(&guard, &message) {
                    let close = |reason: &str| Message::Close(Some(CloseFrame {
                        code: CloseCode::Policy,
                        reason: Utf8Bytes::from(reason.to_string()),
                    }));
                    let _ = to_client.send(close("cordon: refused (credential_exfiltration)")).await;
                    let _ = to_upstream.send(close("going away")).await;
                    break Some(refusal);
                }
                if to_upstream.send(message).await.is_err() {
                    break None;
                }
            }
            message = from_upstream.next() => {
                let message = match message {
                    Some(Ok(message)) => message,
                    Some(Err(Error::Capacity(e))) => {
                        break Some(too_big(&mut to_client, &mut to_upstream, "the upstream", &e).await);
                    }
                    _ => break None,
                };
                let message = masked(&guard, message);
                down.fetch_add(message.len() as u64, std::sync::atomic::Ordering::Relaxed);
                if to_client.send(message).await.is_err() {
                    break None;
                }
            }
            end = stop.ended() => break Some(end),
        }
    };
    if let Some(record) = record {
        record.end(end.as_ref());
    }
}

/// A message or frame over the limit from `who`: both sides are told 1009 (message too big), and the record
/// says why the WebSocket ended.
async fn too_big<C, U>(to_client: &mut C, to_upstream: &mut U, who: &str, e: &CapacityError) -> TunnelEnd
where
    C: futures_util::Sink<Message> + Unpin,
    U: futures_util::Sink<Message> + Unpin,
{
    let close = || {
        Message::Close(Some(CloseFrame {
            code: CloseCode::Size,
            reason: Utf8Bytes::from_static("cordon: message too big"),
        }))
    };
    let _ = to_client.send(close()).await;
    let _ = to_upstream.send(close()).await;
    TunnelEnd::Refused {
        code: "websocket_message_too_big",
        detail: format!("{who} sent a WebSocket message or frame over the limit: {e}"),
    }
}

/// Why a message from the sandbox may not go on, if it may not.
fn refused(guard: &WebSocketGuard, message: &Message) -> Option<TunnelEnd> {
    let payload: &[u8] = match message {
        Message::Text(text) => text.as_bytes(),
        Message::Binary(data) | Message::Ping(data) | Message::Pong(data) => data,
        Message::Close(Some(frame)) => frame.reason.as_bytes(),
        Message::Close(None) | Message::Frame(_) => return None,
    };
    let found = guard.detector.scan(payload);
    if let Some(credential) = found.off_binding(&|c: &str| guard.allowed.iter().any(|a| a == c)) {
        return Some(TunnelEnd::Refused {
            code: "secret_exfiltration",
            detail: format!("a WebSocket message carried the secret of credential {credential}"),
        });
    }
    if !found.plain.is_empty() || !found.disguised.is_empty() {
        return Some(TunnelEnd::Refused {
            code: "credential_exfiltration",
            detail: "a WebSocket message carried a placeholder".into(),
        });
    }
    None
}

/// The message with its destination's secrets masked.
fn masked(guard: &WebSocketGuard, message: Message) -> Message {
    let Some(masker) = &guard.masker else {
        return message;
    };
    let mask = |data: &[u8]| masker.mask(data).map(Bytes::from);
    match message {
        Message::Text(text) => match mask(text.as_bytes()) {
            Some(bytes) => match Utf8Bytes::try_from(bytes) {
                Ok(text) => Message::Text(text),
                Err(_) => Message::Text(Utf8Bytes::from_static("cordon-masked")),
            },
            None => Message::Text(text),
        },
        Message::Binary(data) => Message::Binary(mask(&data).unwrap_or(data)),
        Message::Ping(data) => Message::Ping(mask(&data).unwrap_or(data)),
        Message::Pong(data) => Message::Pong(mask(&data).unwrap_or(data)),
        Message::Close(Some(frame)) => {
            let reason = mask(frame.reason.as_bytes())
                .and_then(|b| Utf8Bytes::try_from(b).ok())
                .unwrap_or(frame.reason);
            Message::Close(Some(CloseFrame {
                code: frame.code,
                reason,
            }))
        }
        other => other,
    }
}
