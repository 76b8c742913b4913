//! A WebSocket inside an interception, relayed frame by frame once the upstream switched protocols
//! ([`super::websocket_frames`]): a data frame goes on as its payload arrives, in pieces of at most 64 KiB, so
//! one WebSocket holds about a piece each way whatever the size of its frames and messages. What the sandbox
//! sends is scanned like a request body (a placeholder or a secret it may not send closes the WebSocket with
//! 1008, policy violation), what the upstream sends has its destination's secrets masked like a response body;
//! the scan and the masking of a message are carried across its frames ([`super::websocket_message`]), so a
//! secret split over frames, with control frames between them, is found as in a whole message. A frame of
//! the sender may reach the receiver as several (an intermediary may refragment a message that uses no
//! extension; none is ever negotiated, so no compression hides what a frame says). A frame over
//! `limits.websocket_frame` is refused from its header, a message as soon as its frames add up to more than
//! `limits.websocket_message` (16 MiB each by default): either closes the WebSocket with 1009 (message too
//! big) on both sides and is recorded as `websocket_message_too_big`. Pings and pongs go through to the other
//! side (scanned or masked, as data); a close is passed on and answered, and ends the relay.

use std::sync::atomic::{AtomicU64, Ordering};

use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use tokio::io::{ReadHalf, WriteHalf};
use tokio_tungstenite::tungstenite::protocol::frame::coding::{CloseCode, Control, OpCode};

use super::websocket_frames::{Fault, FrameLimits, FrameReader, FrameWriter, Piece, fit};
use super::websocket_message::{MessageFilter, Stopped, WebSocketMessage};
use crate::error::TunnelEnd;
use crate::leak::scan::detect::Found;
use crate::leak::scan::stream::{ScanStream, streamed_refuses};
use crate::proxy::WebSocketGuard;
use crate::proxy::tunnel::lifetime::Stop;
use crate::reason::Reason;

type Io = TokioIo<Upgraded>;
type Writer = FrameWriter<WriteHalf<Io>>;

/// What the relay does after a piece.
enum RelayStep {
    Go,
    End(Option<TunnelEnd>),
}

/// One direction: where its frames come from, and the message under way.
struct Leg {
    reader: FrameReader<ReadHalf<Io>>,
    message: Option<WebSocketMessage>,
}

/// Relay between the sandbox's and the upstream's upgraded connections until either closes, the tunnel
/// must end, or the sandbox sends what it may not; the WebSocket's audit record is written at the end.
pub(crate) async fn relay(client: Upgraded, upstream: Upgraded, mut guard: WebSocketGuard, stop: &Stop) {
    let record = guard.take_record();
    let (up, down) = match &record {
        Some(r) => r.counters(),
        None => Default::default(),
    };
    let limits = FrameLimits {
        message: guard.max.0 as u64,
        frame: guard.max.1 as u64,
    };
    let (client_read, client_write) = tokio::io::split(TokioIo::new(client));
    let (upstream_read, upstream_write) = tokio::io::split(TokioIo::new(upstream));
    let mut from_sandbox = Leg {
        reader: FrameReader::new(client_read, true, limits),
        message: None,
    };
    let mut from_upstream = Leg {
        reader: FrameReader::new(upstream_read, false, limits),
        message: None,
    };
    let mut to_sandbox = FrameWriter::new(client_write, false);
    let mut to_upstream = FrameWriter::new(upstream_write, true);
    let end = loop {
        let flow = tokio::select! {
            piece = from_sandbox.reader.next() => {
                sandbox_sent(&guard, piece, &mut from_sandbox.message, &mut to_sandbox, &mut to_upstream, &up).await
            }
            piece = from_upstream.reader.next() => {
                upstream_sent(&guard, piece, &mut from_upstream.message, &mut to_sandbox, &mut to_upstream, &down).await
            }
            end = stop.ended() => RelayStep::End(Some(end)),
        };
        if let RelayStep::End(end) = flow {
            break end;
        }
    };
    if let Some(record) = record {
        record.end(end.as_ref());
    }
}

/// A piece from the sandbox: scanned, then passed on to the upstream.
async fn sandbox_sent(
    guard: &WebSocketGuard,
    piece: Result<Option<Piece>, Fault>,
    message: &mut Option<WebSocketMessage>,
    to_sandbox: &mut Writer,
    to_upstream: &mut Writer,
    up: &AtomicU64,
) -> RelayStep {
    let scan = || ScanStream::new(guard.detector.clone(), streamed_refuses(&guard.allowed));
    let piece = match piece {
        Ok(Some(piece)) => piece,
        Ok(None) => return RelayStep::End(None),
        Err(fault) => return failed(fault, "the sandbox", to_sandbox, to_upstream).await,
    };
    match piece {
        Piece::Data { start, bytes, last } => {
            up.fetch_add(bytes.len() as u64, Ordering::Relaxed);
            if let Some(kind) = start {
                *message = Some(WebSocketMessage::new(kind, MessageFilter::Scan(scan())));
            }
            let mut frames = Vec::new();
            let pushed = match message {
                Some(m) => m.push(bytes, last, &mut frames),
                None => Ok(()),
            };
            if last {
                *message = None;
            }
            match pushed {
                Err(Stopped::Refused(found)) => refuse(guard, &found, to_sandbox, to_upstream).await,
                Err(Stopped::NotText) => not_text("the sandbox", to_sandbox, to_upstream).await,
                Ok(()) => send(frames, to_upstream, None).await,
            }
        }
        Piece::Control { op, payload } => {
            up.fetch_add(payload.len() as u64, Ordering::Relaxed);
            let said = match op {
                Control::Close => payload.get(2..).unwrap_or_default(),
                _ => &payload[..],
            };
            if let Err(found) = scan().check(said) {
                return refuse(guard, &found, to_sandbox, to_upstream).await;
            }
            control(
                op,
                payload.to_vec(),
                &payload,
                to_upstream,
                to_sandbox,
                "the sandbox",
                None,
            )
            .await
        }
    }
}

/// A piece from the upstream: its destination's secrets masked, then passed on to the sandbox.
async fn upstream_sent(
    guard: &WebSocketGuard,
    piece: Result<Option<Piece>, Fault>,
    message: &mut Option<WebSocketMessage>,
    to_sandbox: &mut Writer,
    to_upstream: &mut Writer,
    down: &AtomicU64,
) -> RelayStep {
    let piece = match piece {
        Ok(Some(piece)) => piece,
        Ok(None) => return RelayStep::End(None),
        Err(fault) => return failed(fault, "the upstream", to_upstream, to_sandbox).await,
    };
    match piece {
        Piece::Data { start, bytes, last } => {
            if let Some(kind) = start {
                let filter = match &guard.masker {
                    Some(masker) => MessageFilter::Mask(masker.stream()),
                    None => MessageFilter::Plain,
                };
                *message = Some(WebSocketMessage::new(kind, filter));
            }
            let mut frames = Vec::new();
            let pushed = match message {
                Some(m) => m.push(bytes, last, &mut frames),
                None => Ok(()),
            };
            if last {
                *message = None;
            }
            match pushed {
                Err(_) => not_text("the upstream", to_upstream, to_sandbox).await,
                Ok(()) => send(frames, to_sandbox, Some(down)).await,
            }
        }
        Piece::Control { op, payload } => {
            let masked = |bytes: &[u8]| {
                let masked = guard.masker.as_ref().and_then(|m| m.mask(bytes));
                masked.unwrap_or_else(|| bytes.to_vec())
            };
            let passed = match op {
                Control::Close if payload.len() >= 2 => {
                    // The reason stays text: a masked reason that is not is replaced by none.
                    let reason = masked(&payload[2..]);
                    let reason = String::from_utf8(reason).unwrap_or_default();
                    let mut passed = payload[..2].to_vec();
                    passed.extend_from_slice(fit(&reason, 123).as_bytes());
                    passed
                }
                _ => {
                    let mut passed = masked(&payload);
                    passed.truncate(125);
                    passed
                }
            };
            control(
                op,
                passed,
                &payload,
                to_sandbox,
                to_upstream,
                "the upstream",
                Some(down),
            )
            .await
        }
    }
}

/// Send a message's frames; the bytes sent are counted in `counter`.
async fn send(frames: Vec<super::websocket_message::Out>, to: &mut Writer, counter: Option<&AtomicU64>) -> RelayStep {
    for (opcode, fin, payload) in frames {
        if to.send(opcode, fin, &payload).await.is_err() {
            return RelayStep::End(None);
        }
        if let Some(counter) = counter {
            counter.fetch_add(payload.len() as u64, Ordering::Relaxed);
        }
    }
    RelayStep::Go
}

/// A control frame from `who` (`payload` as it came, `passed` as it goes on): a ping or pong goes on; a close
/// goes on and is answered with itself, and ends the relay.
async fn control(
    op: Control,
    passed: Vec<u8>,
    payload: &[u8],
    to_other: &mut Writer,
    to_sender: &mut Writer,
    who: &str,
    counter: Option<&AtomicU64>,
) -> RelayStep {
    if op == Control::Close
        && let Err(fault) = close_payload(payload)
    {
        return failed(fault, who, to_sender, to_other).await;
    }
    if to_other.send(OpCode::Control(op), true, &passed).await.is_err() {
        return RelayStep::End(None);
    }
    if let Some(counter) = counter {
        counter.fetch_add(passed.len() as u64, Ordering::Relaxed);
    }
    if op != Control::Close {
        return RelayStep::Go;
    }
    let _ = to_sender.send(OpCode::Control(Control::Close), true, payload).await;
    RelayStep::End(None)
}

/// Whether a close frame's payload is one: none, or a code that may be sent and a reason in UTF-8.
fn close_payload(payload: &[u8]) -> Result<(), Fault> {
    let Some((code, reason)) = payload.split_first_chunk::<2>() else {
        return match payload.len() {
            0 => Ok(()),
            _ => Err(Fault::Protocol(CloseCode::Protocol, "a close frame of one byte".into())),
        };
    };
    if !CloseCode::from(u16::from_be_bytes(*code)).is_allowed() {
        return Err(Fault::Protocol(
            CloseCode::Protocol,
            "a close code that may not be sent".into(),
        ));
    }
    if std::str::from_utf8(reason).is_err() {
        return Err(Fault::Protocol(
            CloseCode::Invalid,
            "a close reason that is not UTF-8".into(),
        ));
    }
    Ok(())
}

/// What `who` sent ends the WebSocket: over a limit, 1009 (message too big) to both sides and the record says
/// why; against the protocol, the sender is told why and the other side that cordon goes away.
async fn failed(fault: Fault, who: &str, to_sender: &mut Writer, to_other: &mut Writer) -> RelayStep {
    match fault {
        Fault::TooBig(what) => {
            let _ = to_sender.close(CloseCode::Size, "cordon: message too big").await;
            let _ = to_other.close(CloseCode::Size, "cordon: message too big").await;
            RelayStep::End(Some(TunnelEnd::Refused {
                code: Reason::WebsocketMessageTooBig,
                detail: format!("{who} sent a WebSocket message or frame over the limit: {what}"),
            }))
        }
        Fault::Protocol(code, what) => {
            tracing::debug!("{who} broke the WebSocket protocol: {what}");
            let _ = to_sender.close(code, &format!("cordon: {what}")).await;
            let _ = to_other.close(CloseCode::Away, "going away").await;
            RelayStep::End(None)
        }
        Fault::Broken => RelayStep::End(None),
    }
}

/// A text message from `who` that is not UTF-8.
async fn not_text(who: &str, to_sender: &mut Writer, to_other: &mut Writer) -> RelayStep {
    let fault = Fault::Protocol(CloseCode::Invalid, "a text message that is not UTF-8".into());
    failed(fault, who, to_sender, to_other).await
}

/// The sandbox sent what it may not: 1008 (policy violation) to it, "going away" to the upstream, and the
/// record says what it carried.
async fn refuse(guard: &WebSocketGuard, found: &Found, to_sandbox: &mut Writer, to_upstream: &mut Writer) -> RelayStep {
    let _ = to_sandbox
        .close(CloseCode::Policy, "cordon: refused (credential_exfiltration)")
        .await;
    let _ = to_upstream.close(CloseCode::Away, "going away").await;
    let end = match found.off_binding(&|c: &str| guard.allowed.iter().any(|a| a == c)) {
        Some(credential) => TunnelEnd::Refused {
            code: Reason::SecretExfiltration,
            detail: format!("a WebSocket message carried the secret of credential {credential}"),
        },
        None => TunnelEnd::Refused {
            code: Reason::CredentialExfiltration,
            detail: "a WebSocket message carried a placeholder".into(),
        },
    };
    RelayStep::End(Some(end))
}
