//! WebSocket frames read and written a piece at a time (RFC 6455 §5), on tungstenite's frame header: a data
//! frame's payload comes in pieces of at most [`PIECE`] bytes as they arrive, unmasked, so relaying it never
//! needs the whole frame, let alone the whole message; a control frame comes whole (it is at most 125 bytes).
//! The reader checks what a frame says against the protocol (reserved bits, masking by role, fragmentation,
//! control frames) and the limits (a frame's length is known from its header, a message's from the running
//! total), before any of the payload is read.

use std::io::{self, Cursor};

use bytes::{Buf, Bytes, BytesMut};
use ring::rand::{SecureRandom, SystemRandom};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_tungstenite::tungstenite::protocol::frame::FrameHeader;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{CloseCode, Control, Data, OpCode};

/// The most payload one piece of a data frame holds (what the reader waits for, when the frame has that much
/// left).
pub(crate) const PIECE: usize = 64 * 1024;

/// A data message's kind, given with its first piece.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MessageKind {
    Text,
    Binary,
}

/// What the reader got.
#[derive(Debug)]
pub(crate) enum Piece {
    /// Part of a data message, unmasked: `start` on the first part of the message, `last` on the part that
    /// ends it (a frame of no payload gives one empty part).
    Data {
        start: Option<MessageKind>,
        bytes: Bytes,
        last: bool,
    },
    /// A control frame, whole and unmasked.
    Control { op: Control, payload: Bytes },
}

/// Why reading stopped.
#[derive(Debug)]
pub(crate) enum Fault {
    /// A frame or a message over its limit (what it was).
    TooBig(String),
    /// The peer broke the protocol: the close code to fail the WebSocket with, and what it did.
    Protocol(CloseCode, String),
    /// The connection broke, or ended inside a frame.
    Broken,
}

/// The largest frame and message a reader accepts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FrameLimits {
    pub(crate) frame: u64,
    pub(crate) message: u64,
}

/// The frame being read.
struct OpenFrame {
    /// A control frame (read whole), or data.
    control: Option<Control>,
    fin: bool,
    mask: Option<[u8; 4]>,
    /// How many payload bytes have been read.
    read: usize,
    /// How many are still to come.
    left: u64,
    /// The message's kind, until its first piece is given.
    start: Option<MessageKind>,
}

/// Reads frames from one peer.
pub(crate) struct FrameReader<R> {
    io: R,
    buf: BytesMut,
    /// The peer is a client: its frames must be masked (and a server's must not be).
    from_client: bool,
    limits: FrameLimits,
    frame: Option<OpenFrame>,
    /// Payload bytes of the data message under way, if one is.
    message: Option<u64>,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// A reader of frames from a client (`from_client`) or from a server.
    pub(crate) fn new(io: R, from_client: bool, limits: FrameLimits) -> FrameReader<R> {
        FrameReader {
            io,
            buf: BytesMut::new(),
            from_client,
            limits,
            frame: None,
            message: None,
        }
    }

    /// The next piece; `None` once the peer closed the connection between frames. Cancel-safe: what was read
    /// stays in the reader.
    pub(crate) async fn next(&mut self) -> Result<Option<Piece>, Fault> {
        loop {
            if let Some(piece) = self.piece() {
                return Ok(Some(piece));
            }
            if self.frame.is_none() {
                let mut cursor = Cursor::new(&self.buf[..]);
                match FrameHeader::parse(&mut cursor) {
                    Err(e) => return Err(Fault::Protocol(CloseCode::Protocol, e.to_string())),
                    Ok(Some((header, length))) => {
                        let used = usize::try_from(cursor.position()).unwrap_or(usize::MAX);
                        self.buf.advance(used.min(self.buf.len()));
                        self.open(header, length)?;
                        continue;
                    }
                    Ok(None) => {}
                }
            }
            self.buf.reserve(PIECE);
            match self.io.read_buf(&mut self.buf).await {
                Ok(0) if self.buf.is_empty() && self.frame.is_none() => return Ok(None),
                Ok(0) | Err(_) => return Err(Fault::Broken),
                Ok(_) => {}
            }
        }
    }

    /// Check a frame's header and begin it.
    fn open(&mut self, header: FrameHeader, length: u64) -> Result<(), Fault> {
        let protocol = |what: &str| Err(Fault::Protocol(CloseCode::Protocol, what.to_string()));
        if header.rsv1 || header.rsv2 || header.rsv3 {
            return protocol("a frame with reserved bits set (no extension was negotiated)");
        }
        if header.mask.is_some() != self.from_client {
            return protocol(if self.from_client {
                "an unmasked frame from the client"
            } else {
                "a masked frame from the server"
            });
        }
        if length > self.limits.frame {
            return Err(Fault::TooBig(format!(
                "a frame of {length} bytes, over the limit of {}",
                self.limits.frame
            )));
        }
        let (control, start) = match header.opcode {
            OpCode::Control(op) => {
                if !header.is_final || length > 125 {
                    return protocol("a fragmented or oversized control frame");
                }
                (Some(op), None)
            }
            OpCode::Data(op) => {
                let start = match (op, self.message) {
                    (Data::Continue, Some(_)) => None,
                    (Data::Continue, None) => return protocol("a continuation frame outside a message"),
                    (Data::Text | Data::Binary, Some(_)) => return protocol("a new message inside a fragmented one"),
                    (Data::Text, None) => Some(MessageKind::Text),
                    (Data::Binary, None) => Some(MessageKind::Binary),
                    (Data::Reserved(_), _) => return protocol("a reserved opcode"),
                };
                let total = self.message.unwrap_or(0).saturating_add(length);
                if total > self.limits.message {
                    return Err(Fault::TooBig(format!(
                        "a message of {total} bytes or more, over the limit of {}",
                        self.limits.message
                    )));
                }
                self.message = Some(total);
                (None, start)
            }
        };
        self.frame = Some(OpenFrame {
            control,
            fin: header.is_final,
            mask: header.mask,
            read: 0,
            left: length,
            start,
        });
        Ok(())
    }

    /// The next piece of the open frame, if enough of it has been read: a control frame whole, a data frame's
    /// next [`PIECE`] (or what is left of it, if less).
    fn piece(&mut self) -> Option<Piece> {
        let open = self.frame.as_mut()?;
        let left = usize::try_from(open.left).unwrap_or(usize::MAX);
        let want = if open.control.is_some() { left } else { left.min(PIECE) };
        if self.buf.len() < want {
            return None;
        }
        let mut bytes = self.buf.split_to(want);
        if let Some(key) = open.mask {
            apply_mask(&mut bytes, key, open.read);
        }
        open.read += want;
        open.left -= want as u64;
        let done = open.left == 0;
        let piece = match open.control {
            Some(op) => Piece::Control {
                op,
                payload: bytes.freeze(),
            },
            None => Piece::Data {
                start: open.start.take(),
                bytes: bytes.freeze(),
                last: done && open.fin,
            },
        };
        if done {
            if open.control.is_none() && open.fin {
                self.message = None;
            }
            self.frame = None;
        }
        Some(piece)
    }
}

/// Writes frames to one peer.
pub(crate) struct FrameWriter<W> {
    io: W,
    /// Frames are masked (cordon is the client).
    masked: bool,
    random: SystemRandom,
}

impl<W: AsyncWrite + Unpin> FrameWriter<W> {
    /// A writer of frames to a server (`masked`, as a client's must be) or to a client.
    pub(crate) fn new(io: W, masked: bool) -> FrameWriter<W> {
        FrameWriter {
            io,
            masked,
            random: SystemRandom::new(),
        }
    }

    /// What the frames were written to (the fuzzing entry reads them back).
    #[cfg(feature = "fuzzing")]
    pub(crate) fn into_inner(self) -> W {
        self.io
    }

    /// Send one frame and flush it.
    pub(crate) async fn send(&mut self, opcode: OpCode, fin: bool, payload: &[u8]) -> io::Result<()> {
        let mut header = FrameHeader {
            is_final: fin,
            opcode,
            ..FrameHeader::default()
        };
        if self.masked {
            let mut key = [0; 4];
            self.random
                .fill(&mut key)
                .map_err(|_| io::Error::other("no random masking key"))?;
            header.mask = Some(key);
        }
        let length = payload.len() as u64;
        let mut head = Vec::with_capacity(header.len(length) + if self.masked { payload.len() } else { 0 });
        header.format(length, &mut head).map_err(io::Error::other)?;
        if let Some(key) = header.mask {
            // One copy, masked: the frame is written at once.
            let at = head.len();
            head.extend_from_slice(payload);
            apply_mask(&mut head[at..], key, 0);
            self.io.write_all(&head).await?;
        } else {
            self.io.write_all(&head).await?;
            self.io.write_all(payload).await?;
        }
        self.io.flush().await
    }

    /// Send a close frame with `code` and `reason` (cut to fit a control frame, where a character ends).
    pub(crate) async fn close(&mut self, code: CloseCode, reason: &str) -> io::Result<()> {
        let mut payload = u16::from(code).to_be_bytes().to_vec();
        payload.extend_from_slice(fit(reason, 123).as_bytes());
        self.send(OpCode::Control(Control::Close), true, &payload).await
    }
}

/// The longest start of `text` of at most `max` bytes that ends where a character does.
pub(crate) fn fit(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// XOR `bytes` with a frame's masking key, `at` bytes into its payload (RFC 6455 §5.3): masks and unmasks.
/// Eight bytes at a time (the key twice), which also keeps it quick in unoptimised test builds.
fn apply_mask(bytes: &mut [u8], key: [u8; 4], at: usize) {
    let mut key = key;
    key.rotate_left(at % 4);
    let mut twice = [0; 8];
    twice[..4].copy_from_slice(&key);
    twice[4..].copy_from_slice(&key);
    let wide = u64::from_ne_bytes(twice);
    let mut words = bytes.chunks_exact_mut(8);
    for word in &mut words {
        if let Ok(w) = <[u8; 8]>::try_from(&*word) {
            word.copy_from_slice(&(u64::from_ne_bytes(w) ^ wide).to_ne_bytes());
        }
    }
    for (b, k) in words.into_remainder().iter_mut().zip(twice) {
        *b ^= k;
    }
}

#[cfg(test)]
#[path = "websocket_frames_tests.rs"]
mod tests;
