//! One data message of a WebSocket on its way, piece by piece: what the sandbox sends through a
//! [`ScanStream`], what the upstream sends through a [`MaskStream`], each started afresh for every message and
//! carried across its frames, so that a placeholder or secret split over frames (or pieces) is found as if
//! the message were whole. A text message is also checked to be UTF-8 as it goes, and its frames are cut
//! where a character ends: what the masking or the scan holds back may end inside one, and the receiver reads
//! each frame as text.

use bytes::{Bytes, BytesMut};
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};

use super::websocket_frames::MessageKind;
use crate::leak::mask::masker::MaskStream;
use crate::leak::scan::detect::Found;
use crate::leak::scan::stream::ScanStream;

/// What stops a message.
#[derive(Debug)]
pub(crate) enum Stopped {
    /// The scan found what the sandbox may not send.
    Refused(Found),
    /// A text message that is not UTF-8.
    NotText,
}

/// What a message's bytes go through.
pub(crate) enum MessageFilter {
    /// Scanned (from the sandbox).
    Scan(ScanStream),
    /// Masked (from the upstream, whose secrets are masked).
    Mask(MaskStream),
    /// Neither (from an upstream whose secrets are not masked).
    Plain,
}

/// A frame to send: its opcode, whether it ends the message, its payload.
pub(crate) type Out = (OpCode, bool, Bytes);

/// A message under way.
pub(crate) struct WebSocketMessage {
    kind: MessageKind,
    filter: MessageFilter,
    /// The first frame has been sent (the next ones are continuations).
    began: bool,
    /// Of a text message: the start of a character whose end is still to come.
    partial: Option<BytesMut>,
}

impl WebSocketMessage {
    /// A message of `kind` going through `filter`.
    pub(crate) fn new(kind: MessageKind, filter: MessageFilter) -> WebSocketMessage {
        WebSocketMessage {
            kind,
            filter,
            began: false,
            partial: (kind == MessageKind::Text).then(BytesMut::new),
        }
    }

    /// The next piece of the message (`last` if it ends it): the frames to send now, in `out`. The last piece
    /// always gives a final frame (perhaps empty); another may give none.
    pub(crate) fn push(&mut self, bytes: Bytes, last: bool, out: &mut Vec<Out>) -> Result<(), Stopped> {
        let mut chunks = Vec::new();
        match &mut self.filter {
            MessageFilter::Scan(scan) => {
                scan.push(bytes, &mut chunks).map_err(Stopped::Refused)?;
                if last {
                    scan.finish(&mut chunks);
                }
            }
            MessageFilter::Mask(mask) => {
                chunks.push(mask.push(bytes));
                if last {
                    chunks.push(mask.finish());
                }
            }
            MessageFilter::Plain => chunks.push(bytes),
        }
        chunks.retain(|c| !c.is_empty());
        if last && chunks.is_empty() {
            chunks.push(Bytes::new());
        }
        let count = chunks.len();
        for (i, chunk) in chunks.into_iter().enumerate() {
            let fin = last && i + 1 == count;
            let chunk = self.whole_characters(chunk, fin)?;
            if chunk.is_empty() && !fin {
                continue;
            }
            let opcode = match (self.began, self.kind) {
                (true, _) => Data::Continue,
                (false, MessageKind::Text) => Data::Text,
                (false, MessageKind::Binary) => Data::Binary,
            };
            self.began = true;
            out.push((OpCode::Data(opcode), fin, chunk));
        }
        Ok(())
    }

    /// Of a text message, `chunk` after what was held of a character, up to where its last whole character
    /// ends (the rest is held; at the end of the message nothing may be); any other message's as it is.
    fn whole_characters(&mut self, chunk: Bytes, fin: bool) -> Result<Bytes, Stopped> {
        let Some(partial) = &mut self.partial else {
            return Ok(chunk);
        };
        let bytes = if partial.is_empty() {
            chunk
        } else {
            partial.extend_from_slice(&chunk);
            partial.split().freeze()
        };
        match std::str::from_utf8(&bytes) {
            Ok(_) => Ok(bytes),
            Err(e) if e.error_len().is_none() && !fin => {
                let cut = e.valid_up_to();
                partial.extend_from_slice(&bytes[cut..]);
                Ok(bytes.slice(..cut))
            }
            Err(_) => Err(Stopped::NotText),
        }
    }
}

#[cfg(test)]
#[path = "websocket_message_tests.rs"]
mod tests;
