//! The TCP socket under a tunnel's client stream, so that a `tls: tunnel` can be moved by splice(2): the
//! CONNECT's upgraded connection (under hyper and the framing guard) and the transparent listener's replayed
//! stream both give theirs up, with the bytes already read from it and not yet passed on.

use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::replay::Replay;
use crate::framing::FramingGuard;

/// Something that owns a TCP socket (and is kept alive while the socket is used).
pub(crate) trait HoldsTcp: Send + Sync {
    /// The socket.
    fn tcp(&mut self) -> &mut TcpStream;
}

impl HoldsTcp for TcpStream {
    fn tcp(&mut self) -> &mut TcpStream {
        self
    }
}

impl HoldsTcp for FramingGuard<TcpStream> {
    fn tcp(&mut self) -> &mut TcpStream {
        self.io_mut()
    }
}

/// A client's TCP socket, and what was read from it but not passed on yet (to be sent first).
pub(crate) struct Socket {
    holder: Box<dyn HoldsTcp>,
    /// Bytes read from the socket and not yet passed on.
    pub(crate) pending: Vec<u8>,
}

impl Socket {
    /// The socket.
    pub(crate) fn tcp(&mut self) -> &mut TcpStream {
        self.holder.tcp()
    }
}

/// A stream to copy through a buffer, where no socket could be had.
pub(crate) trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// A client stream that can give up its TCP socket.
pub(crate) trait IntoSocket {
    /// The socket underneath, or (where there is none to be had) the stream itself, to be copied.
    fn into_socket(self) -> Result<Socket, Box<dyn Stream>>;
}

impl IntoSocket for Replay<TcpStream> {
    fn into_socket(self) -> Result<Socket, Box<dyn Stream>> {
        let (pending, tcp) = self.into_parts();
        Ok(Socket {
            holder: Box::new(tcp),
            pending,
        })
    }
}

impl IntoSocket for TokioIo<Upgraded> {
    fn into_socket(self) -> Result<Socket, Box<dyn Stream>> {
        let parts = match self.into_inner().downcast::<TokioIo<FramingGuard<TcpStream>>>() {
            Ok(parts) => parts,
            Err(upgraded) => return Err(Box::new(TokioIo::new(upgraded))),
        };
        let read = parts.read_buf.to_vec();
        let mut guard = parts.io.into_inner();
        match guard.take_passthrough() {
            // hyper read its buffer from the guard, and the guard its own from the socket: hyper's goes first.
            Some(held) => Ok(Socket {
                pending: [read, held].concat(),
                holder: Box::new(guard),
            }),
            None => Err(Box::new(Replay::new(read, guard))),
        }
    }
}
