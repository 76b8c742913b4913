//! The guard as the connection hyper reads and writes: requests handed over head by head, hyper's answers
//! passed straight through, and on shutdown the rejection written after them.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::*;

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncRead for FramingGuard<IO> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, out: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.release > 0 {
                let n = this.release.min(out.remaining());
                out.put_slice(&this.buf[this.start..this.start + n]);
                this.start += n;
                this.release -= n;
                return Poll::Ready(Ok(()));
            }
            match this.state {
                FramingState::Rejected { crlf_left } => {
                    let n = crlf_left.min(out.remaining());
                    out.put_slice(&b"\r\n"[2 - crlf_left..2 - crlf_left + n]);
                    this.state = FramingState::Rejected {
                        crlf_left: crlf_left - n,
                    };
                    return Poll::Ready(Ok(()));
                }
                FramingState::Passthrough if this.start < this.end => {
                    this.release = this.end - this.start;
                    continue;
                }
                FramingState::Passthrough => {
                    // Passthrough is final and everything held has been handed out: the read buffer is not
                    // needed again, so a long-lived tunnel does not keep it (8 KiB per connection).
                    if this.buf.capacity() > 0 {
                        this.buf = Vec::new();
                        this.start = 0;
                        this.end = 0;
                    }
                    return Pin::new(&mut this.io).poll_read(cx, out);
                }
                FramingState::AwaitUpgrade => {
                    this.upgrade_waker = Some(cx.waker().clone());
                    return Poll::Pending;
                }
                _ => {}
            }
            match this.advance() {
                Ok(true) => continue,
                Ok(false) => {}
                Err(violation) => {
                    this.reject(violation);
                    continue;
                }
            }
            if this.client_eof {
                return Poll::Ready(Ok(()));
            }
            if !this.make_room() {
                this.reject(FramingViolation::HeadTooLarge);
                continue;
            }
            let mut into = ReadBuf::new(&mut this.buf[this.end..]);
            match Pin::new(&mut this.io).poll_read(cx, &mut into) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) if into.filled().is_empty() => this.client_eof = true,
                Poll::Ready(Ok(())) => this.end += into.filled().len(),
            }
        }
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncWrite for FramingGuard<IO> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.observe_response(data);
        let polled = Pin::new(&mut this.io).poll_write(cx, data);
        this.wrote |= matches!(polled, Poll::Ready(Ok(n)) if n > 0);
        polled
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let Some(first) = bufs.iter().find(|b| !b.is_empty()) {
            this.observe_response(first);
        }
        let polled = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.wrote |= matches!(polled, Poll::Ready(Ok(n)) if n > 0);
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match this.report.violation.get().cloned() {
            None => Pin::new(&mut this.io).poll_shutdown(cx),
            Some(v) => this.poll_close_rejected(cx, &v).map(Ok),
        }
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> Drop for FramingGuard<IO> {
    /// Fallback for a guard dropped without `poll_shutdown` (e.g. the
    /// connection task was cancelled): if hyper never wrote a byte, no partial
    /// response can be on the wire, so try once, without blocking, to send the
    /// rejection.
    fn drop(&mut self) {
        let Some(v) = self.report.violation.get() else {
            return;
        };
        if self.wrote || !matches!(self.closing, Closing::Open) {
            return;
        }
        let out = (self.render)(v);
        let mut cx = Context::from_waker(Waker::noop());
        let mut off = 0;
        while off < out.len() {
            match Pin::new(&mut self.io).poll_write(&mut cx, &out[off..]) {
                Poll::Ready(Ok(n)) if n > 0 => off += n,
                _ => return,
            }
        }
        let _ = Pin::new(&mut self.io).poll_flush(&mut cx);
        let _ = Pin::new(&mut self.io).poll_shutdown(&mut cx);
    }
}
