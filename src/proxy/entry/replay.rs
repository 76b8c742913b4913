//! A stream that first yields bytes already read from it (the ClientHello cordon read to learn the SNI),
//! then the rest of the stream.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// `head` replayed before `inner`'s own bytes; writes go straight to `inner`.
pub(crate) struct Replay<S> {
    head: Vec<u8>,
    at: usize,
    inner: S,
}

impl<S> Replay<S> {
    /// Replay `head`, then read from `inner`.
    pub(crate) fn new(head: Vec<u8>, inner: S) -> Replay<S> {
        Replay { head, at: 0, inner }
    }

    /// What is left of the head, and the stream.
    pub(crate) fn into_parts(mut self) -> (Vec<u8>, S) {
        let rest = self.head.split_off(self.at);
        (rest, self.inner)
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Replay<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if self.at < self.head.len() {
            let rest = &self.head[self.at..];
            let n = rest.len().min(buf.remaining());
            buf.put_slice(&rest[..n]);
            self.at += n;
            if self.at == self.head.len() {
                self.head = Vec::new();
                self.at = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Replay<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
#[path = "replay_tests.rs"]
mod tests;
