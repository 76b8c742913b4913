//! A stream that first yields bytes already read from it (the ClientHello cordon read to learn the SNI),
//! then the rest of the stream.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// `head` replayed before `inner`'s own bytes; writes go straight to `inner`.
pub(super) struct Replay<S> {
    head: Vec<u8>,
    at: usize,
    inner: S,
}

impl<S> Replay<S> {
    /// Replay `head`, then read from `inner`.
    pub(super) fn new(head: Vec<u8>, inner: S) -> Replay<S> {
        Replay { head, at: 0, inner }
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
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[tokio::test]
    async fn head_comes_first_then_the_stream_and_writes_pass() {
        let (a, mut b) = tokio::io::duplex(64);
        let mut r = Replay::new(b"hello ".to_vec(), a);
        b.write_all(b"world").await.unwrap();
        let mut small = [0u8; 4];
        r.read_exact(&mut small).await.unwrap();
        assert_eq!(&small, b"hell");
        let mut rest = [0u8; 7];
        r.read_exact(&mut rest).await.unwrap();
        assert_eq!(&rest, b"o world");
        r.write_all(b"back").await.unwrap();
        let mut got = [0u8; 4];
        b.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"back");
    }
}
