//! Byte-level request-framing guard between the client socket and hyper.
//!
//! hyper's HTTP/1 server is lenient where an egress proxy must not be: it
//! silently drops `Content-Length` when `Transfer-Encoding: chunked` is also
//! present and merges identical duplicate `Content-Length` lines, so the
//! service never learns that a request was ambiguous. [`FramingGuard`] wraps
//! the client connection, parses every request head with `httparse` (the
//! parser hyper itself uses) before hyper sees a byte of it, tracks where each
//! body ends so that it knows where the next head starts, and refuses any
//! ambiguous framing: the refused request and everything after it is never
//! handed to hyper, the violation is recorded in a [`FramingReport`], and the
//! rendered error response is written to the client once hyper has finished
//! writing the responses to the requests before it.
//!
//! How a refusal reaches hyper: the guard hands hyper one empty line (`\r\n`,
//! which RFC 9112 lets a server ignore before a request line) and then
//! end-of-file. hyper holds the empty line in its read buffer, so it does not
//! poll the socket while it still answers earlier pipelined requests (an EOF
//! there would abort the connection and lose those responses); when it is
//! idle it discards the empty line, sees EOF, and closes the connection
//! gracefully through `poll_shutdown`. That is where the guard writes the
//! rejection (after hyper's own bytes, which hyper flushes first), shuts the
//! socket's write side, and briefly drains what the client still sends, so
//! that closing with unread data does not reset the connection and destroy
//! the rejection in flight.
//!
//! `CONNECT` and `Upgrade` requests switch the guard to passthrough, because
//! the bytes after them may be tunnel data. As hyper keeps a connection alive
//! after a *refused* `CONNECT` and would parse whatever follows as further
//! requests, the guard appends `connection: close` to such heads: hyper then
//! either upgrades the connection or closes it, and never parses another
//! request on it.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

mod inspect;
mod stream;
mod violation;

#[cfg(test)]
pub(crate) use inspect::MAX_TARGET;
use inspect::{BodyFraming, chunk_size, find_lf, head_end_hint, inspect_head, validate_trailers};
pub(crate) use violation::{FramingReport, FramingViolation};

/// Header slots for one request head; more headers count as a too-large head. As many as hyper's parser reads
/// (its default, 100): a head hyper would refuse with a bare 431 is refused here first, with its reason.
const MAX_HEADERS: usize = 100;
/// Longest accepted chunk-size line, extensions included.
const MAX_CHUNK_LINE: usize = 4096;
/// Initial (and minimum) size of the read buffer.
const MIN_BUF: usize = 8 * 1024;
/// Header appended to `CONNECT` and `Upgrade` heads.
const CONNECTION_CLOSE: &[u8] = b"connection: close\r\n";
/// How long, at most, the client's remaining bytes are drained after a rejection.
const LINGER_TIME: Duration = Duration::from_secs(2);
/// How many of the client's remaining bytes, at most, are drained after a rejection.
const LINGER_BYTES: usize = 1 << 20;

/// Where the guard is in the client-to-server byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FramingState {
    Head,
    Fixed(u64),
    ChunkSize,
    ChunkData(u64),
    ChunkDataEnd,
    Trailers {
        line_start: usize,
    },
    Passthrough,
    /// After an `Upgrade` request without a body: nothing more is handed to hyper until its answer shows
    /// whether the protocol switched (101: passthrough) or not (back to `Head`).
    AwaitUpgrade,
    /// Refused: hand out the `crlf_left` last bytes of `\r\n`, then EOF.
    Rejected {
        crlf_left: usize,
    },
}

/// How the guard's `poll_shutdown` delivers a rejection.
enum Closing {
    Open,
    Render {
        out: Vec<u8>,
        off: usize,
    },
    Flush,
    Shutdown,
    Linger {
        timer: Pin<Box<tokio::time::Sleep>>,
        drained: usize,
    },
    Done,
}

/// Wraps a client connection and refuses requests with ambiguous framing
/// before hyper sees a byte of them; see the module documentation.
pub(crate) struct FramingGuard<IO: AsyncRead + AsyncWrite + Unpin> {
    io: IO,
    report: FramingReport,
    render: fn(&FramingViolation) -> Vec<u8>,
    max_head: usize,
    /// Read buffer, fully initialised; `buf[start..end]` holds unconsumed client bytes.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Bytes at `buf[start..]` validated and ready for hyper.
    release: usize,
    /// Bytes after `start` already searched for a line/head terminator.
    scan: usize,
    state: FramingState,
    client_eof: bool,
    /// Whether hyper has written any byte (gates the drop fallback).
    wrote: bool,
    /// The reader parked in `AwaitUpgrade`, woken when hyper writes its answer.
    upgrade_waker: Option<Waker>,
    closing: Closing,
}

impl<IO: AsyncRead + AsyncWrite + Unpin> FramingGuard<IO> {
    /// Wraps `io`.
    ///
    /// `max_head_bytes`: request line + headers limit (a larger head is
    /// refused with [`FramingViolation::HeadTooLarge`]; it also bounds a
    /// chunked body's trailer section). `render`: turns a violation into the
    /// complete raw HTTP/1.1 response (status line, headers including
    /// `connection: close` and `content-length`, body) sent to the client.
    pub(crate) fn new(
        io: IO,
        max_head_bytes: usize,
        render: fn(&FramingViolation) -> Vec<u8>,
    ) -> (Self, FramingReport) {
        let report = FramingReport::default();
        let guard = Self {
            io,
            report: report.clone(),
            render,
            max_head: max_head_bytes,
            buf: vec![0; MIN_BUF],
            start: 0,
            end: 0,
            release: 0,
            scan: 0,
            state: FramingState::Head,
            client_eof: false,
            wrote: false,
            upgrade_waker: None,
            closing: Closing::Open,
        };
        (guard, report)
    }

    /// The stream inside, to be read or written directly (once the guard has nothing left to check).
    pub(crate) fn io_mut(&mut self) -> &mut IO {
        &mut self.io
    }

    /// Once the connection is a tunnel (passthrough, nothing refused): the bytes the guard read and has not
    /// handed out yet, taken from it (whoever reads the stream underneath from now on must send them first);
    /// `None` before that.
    pub(crate) fn take_passthrough(&mut self) -> Option<Vec<u8>> {
        if self.state != FramingState::Passthrough || self.report.violation.get().is_some() {
            return None;
        }
        let held = self.buf[self.start..self.end].to_vec();
        self.start = self.end;
        self.release = 0;
        Some(held)
    }

    #[cfg(test)]
    fn buffer_len(&self) -> usize {
        self.buf.len()
    }

    /// Records `violation` and stops handing client bytes to hyper.
    fn reject(&mut self, violation: FramingViolation) {
        // The first violation wins; there is only ever one per connection.
        let _ = self.report.violation.set(violation);
        // At a message boundary, give hyper an empty line to hold in its read
        // buffer (see the module docs); mid-body, a plain EOF fails the body.
        let crlf_left = if self.state == FramingState::Head { 2 } else { 0 };
        self.state = FramingState::Rejected { crlf_left };
        self.start = 0;
        self.end = 0;
        self.release = 0;
    }

    /// Tries to validate more buffered bytes. `Ok(false)`: more input needed.
    fn advance(&mut self) -> Result<bool, FramingViolation> {
        let avail = &self.buf[self.start..self.end];
        match self.state {
            FramingState::Head => {
                let head = if head_end_hint(avail, self.scan) {
                    inspect_head(avail, self.max_head)?
                } else {
                    None
                };
                let Some(head) = head else {
                    self.scan = avail.len();
                    return if avail.len() >= self.max_head {
                        Err(FramingViolation::HeadTooLarge)
                    } else {
                        Ok(false)
                    };
                };
                self.scan = 0;
                self.release = head.len;
                let bodyless = matches!(head.body, BodyFraming::None | BodyFraming::Fixed(0));
                self.state = if head.tunnel || (head.upgrade && !bodyless) {
                    // SECURITY: smuggling after a refused CONNECT/Upgrade; passthrough is
                    // only safe if hyper can never parse another request on this connection.
                    self.release = self.append_connection_close(head.len);
                    FramingState::Passthrough
                } else if head.upgrade {
                    // SECURITY: the same smuggling after a refused Upgrade (e.g. a WebSocket handshake
                    // answered 403): the bytes after it are only let through unchecked after a 101.
                    FramingState::AwaitUpgrade
                } else {
                    match head.body {
                        BodyFraming::Chunked => FramingState::ChunkSize,
                        BodyFraming::Fixed(n) if n > 0 => FramingState::Fixed(n),
                        BodyFraming::Fixed(_) | BodyFraming::None => FramingState::Head,
                    }
                };
                Ok(true)
            }
            FramingState::Fixed(left) | FramingState::ChunkData(left) => {
                if avail.is_empty() {
                    return Ok(false);
                }
                let n = usize::try_from(left).unwrap_or(usize::MAX).min(avail.len());
                self.release = n;
                let left = left - n as u64;
                self.state = match (self.state, left) {
                    (FramingState::Fixed(_), 0) => FramingState::Head,
                    (FramingState::Fixed(_), _) => FramingState::Fixed(left),
                    (_, 0) => FramingState::ChunkDataEnd,
                    _ => FramingState::ChunkData(left),
                };
                Ok(true)
            }
            FramingState::ChunkSize => {
                let Some(lf) = find_lf(avail, self.scan) else {
                    self.scan = avail.len();
                    return if avail.len() >= MAX_CHUNK_LINE {
                        Err(FramingViolation::MalformedChunk)
                    } else {
                        Ok(false)
                    };
                };
                if lf >= MAX_CHUNK_LINE {
                    return Err(FramingViolation::MalformedChunk);
                }
                let size = chunk_size(&avail[..=lf])?;
                self.scan = 0;
                self.release = lf + 1;
                self.state = if size == 0 {
                    FramingState::Trailers { line_start: 0 }
                } else {
                    FramingState::ChunkData(size)
                };
                Ok(true)
            }
            FramingState::ChunkDataEnd => match avail {
                [b'\r', b'\n', ..] => {
                    self.release = 2;
                    self.state = FramingState::ChunkSize;
                    Ok(true)
                }
                [] | [b'\r'] => Ok(false),
                // SECURITY: chunk data longer than its declared size (missing CRLF).
                _ => Err(FramingViolation::MalformedChunk),
            },
            FramingState::Trailers { mut line_start } => loop {
                let Some(lf) = find_lf(avail, self.scan.max(line_start)) else {
                    self.scan = avail.len();
                    self.state = FramingState::Trailers { line_start };
                    return if avail.len() >= self.max_head {
                        Err(FramingViolation::MalformedChunk)
                    } else {
                        Ok(false)
                    };
                };
                if lf >= self.max_head {
                    return Err(FramingViolation::MalformedChunk);
                }
                // SECURITY: trailer-section desync; hyper ends trailer lines only at CRLF,
                // so a bare LF or CR could end the section at a different byte than hyper.
                match &avail[line_start..=lf] {
                    b"\r\n" => {
                        validate_trailers(&avail[..=lf])?;
                        self.scan = 0;
                        self.release = lf + 1;
                        self.state = FramingState::Head;
                        return Ok(true);
                    }
                    [line @ .., b'\r', b'\n'] if !line.contains(&b'\r') => line_start = lf + 1,
                    _ => return Err(FramingViolation::MalformedChunk),
                }
            },
            FramingState::Passthrough | FramingState::AwaitUpgrade | FramingState::Rejected { .. } => Ok(false),
        }
    }

    /// Inserts `connection: close` before the final empty line of the head of
    /// `head_len` bytes at `buf[start..]`; returns the new head length.
    /// In `AwaitUpgrade`, hyper's first write is the head of its answer to the Upgrade request: a 101
    /// switches to passthrough, anything else resumes checking requests.
    fn observe_response(&mut self, data: &[u8]) {
        if self.state != FramingState::AwaitUpgrade || data.is_empty() {
            return;
        }
        let switched = data.starts_with(b"HTTP/1.1 101") || data.starts_with(b"HTTP/1.0 101");
        self.state = if switched {
            FramingState::Passthrough
        } else {
            FramingState::Head
        };
        if let Some(w) = self.upgrade_waker.take() {
            w.wake();
        }
    }

    fn append_connection_close(&mut self, head_len: usize) -> usize {
        if self.end + CONNECTION_CLOSE.len() > self.buf.len() {
            self.compact();
            if self.end + CONNECTION_CLOSE.len() > self.buf.len() {
                self.buf.resize(self.end + CONNECTION_CLOSE.len(), 0);
            }
        }
        let head_end = self.start + head_len;
        let at = if self.buf[..head_end].ends_with(b"\r\n") {
            head_end - 2
        } else {
            head_end - 1
        };
        self.buf.copy_within(at..self.end, at + CONNECTION_CLOSE.len());
        self.buf[at..at + CONNECTION_CLOSE.len()].copy_from_slice(CONNECTION_CLOSE);
        self.end += CONNECTION_CLOSE.len();
        head_len + CONNECTION_CLOSE.len()
    }

    fn compact(&mut self) {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
    }

    /// Makes room after `end`; `false` if the buffer may not grow further
    /// (unreachable while the per-state limits hold).
    fn make_room(&mut self) -> bool {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        if self.end < self.buf.len() {
            return true;
        }
        self.compact();
        let limit = self.max_head.max(MAX_CHUNK_LINE) + MIN_BUF;
        if self.end == self.buf.len() {
            let grown = (self.buf.len() * 2).min(limit);
            if grown <= self.buf.len() {
                return false;
            }
            self.buf.resize(grown, 0);
        }
        true
    }

    /// `poll_shutdown` once a violation is recorded: render, flush, shut the
    /// write side, drain the client for a bounded time. I/O errors end the
    /// sequence quietly: the report already holds the violation.
    fn poll_close_rejected(&mut self, cx: &mut Context<'_>, v: &FramingViolation) -> Poll<()> {
        loop {
            let io = Pin::new(&mut self.io);
            self.closing = match &mut self.closing {
                Closing::Open => Closing::Render {
                    out: (self.render)(v),
                    off: 0,
                },
                Closing::Render { out, off } if *off < out.len() => match io.poll_write(cx, &out[*off..]) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Ok(n)) if n > 0 => {
                        *off += n;
                        continue;
                    }
                    Poll::Ready(_) => Closing::Done,
                },
                Closing::Render { .. } => Closing::Flush,
                Closing::Flush => match io.poll_flush(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(_) => Closing::Shutdown,
                },
                Closing::Shutdown => match io.poll_shutdown(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(_) => Closing::Linger {
                        timer: Box::pin(tokio::time::sleep(LINGER_TIME)),
                        drained: 0,
                    },
                },
                Closing::Linger { timer, drained } => {
                    // Closing a socket with unread input makes the kernel send a
                    // reset, which can destroy the rejection before the client reads it.
                    let mut scratch = ReadBuf::new(&mut self.buf);
                    match io.poll_read(cx, &mut scratch) {
                        Poll::Ready(Ok(())) if !scratch.filled().is_empty() => {
                            *drained += scratch.filled().len();
                            if *drained < LINGER_BYTES {
                                continue;
                            }
                            Closing::Done
                        }
                        Poll::Ready(_) => Closing::Done,
                        Poll::Pending if timer.as_mut().poll(cx).is_pending() => {
                            return Poll::Pending;
                        }
                        Poll::Pending => Closing::Done,
                    }
                }
                Closing::Done => return Poll::Ready(()),
            };
        }
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
