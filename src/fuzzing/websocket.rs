//! The WebSocket relay's reader and message splitter (`src/entry/websocket_frames.rs`,
//! `src/entry/websocket_message.rs`) on one peer's bytes, for the `websocket` cargo-fuzz target: frames read a
//! piece at a time, each data message passed through unchanged (no scan, no masking) and written out again as
//! cordon writes frames to a client (unmasked).

use tokio_tungstenite::tungstenite::protocol::frame::coding::OpCode;

use super::{Script, once};
use crate::proxy::tunnel::websocket_frames::{Fault, FrameLimits, FrameReader, FrameWriter, MessageKind, Piece};
use crate::proxy::tunnel::websocket_message::{MessageFilter, WebSocketMessage};

/// What the relay made of one peer's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relayed {
    /// Each data message the reader gave, whole or as far as it got: (text, its unmasked payload, ended).
    pub messages: Vec<(bool, Vec<u8>, bool)>,
    /// The control frames read: (opcode, unmasked payload).
    pub controls: Vec<(u8, Vec<u8>)>,
    /// The largest piece of data the reader gave at once.
    pub largest_piece: usize,
    /// The frames the relay wrote, as bytes on the wire.
    pub written: Vec<u8>,
    /// Why it stopped: `None` at a clean end between frames, else `too_big`, `protocol`, `broken` or
    /// `not_text`.
    pub stopped: Option<&'static str>,
}

/// Read frames from a peer that sends `reads` (a client's, masked, when `from_client`), under a frame and a
/// message limit, relaying each data message.
pub fn websocket(reads: &[&[u8]], from_client: bool, frame: u64, message: u64) -> Relayed {
    let script = Script(reads.iter().filter(|r| !r.is_empty()).map(|r| r.to_vec()).collect());
    let mut reader = FrameReader::new(script, from_client, FrameLimits { frame, message });
    let mut writer = FrameWriter::new(Vec::new(), false);
    let mut out = Relayed {
        messages: Vec::new(),
        controls: Vec::new(),
        largest_piece: 0,
        written: Vec::new(),
        stopped: None,
    };
    let mut under_way: Option<WebSocketMessage> = None;
    loop {
        let piece = match once(reader.next()) {
            Some(Ok(Some(piece))) => piece,
            Some(Ok(None)) => break,
            Some(Err(fault)) => {
                out.stopped = Some(match fault {
                    Fault::TooBig(_) => "too_big",
                    Fault::Protocol(..) => "protocol",
                    Fault::Broken => "broken",
                });
                break;
            }
            // The script never waits: a reader that does has nothing more to read.
            None => {
                out.stopped = Some("broken");
                break;
            }
        };
        match piece {
            Piece::Control { op, payload } => out.controls.push((u8::from(OpCode::Control(op)), payload.to_vec())),
            Piece::Data { start, bytes, last } => {
                out.largest_piece = out.largest_piece.max(bytes.len());
                if let Some(kind) = start {
                    under_way = Some(WebSocketMessage::new(kind, MessageFilter::Plain));
                    out.messages.push((kind == MessageKind::Text, Vec::new(), false));
                }
                if let Some(m) = out.messages.last_mut() {
                    m.1.extend_from_slice(&bytes);
                    m.2 = last;
                }
                let Some(msg) = under_way.as_mut() else {
                    out.stopped = Some("protocol");
                    break;
                };
                let mut frames = Vec::new();
                // Without a scan, only a text message that is not UTF-8 stops.
                if msg.push(bytes, last, &mut frames).is_err() {
                    out.stopped = Some("not_text");
                    break;
                }
                for (opcode, fin, payload) in frames {
                    let _ = once(writer.send(opcode, fin, &payload));
                }
                if last {
                    under_way = None;
                }
            }
        }
    }
    out.written = writer.into_inner();
    out
}
