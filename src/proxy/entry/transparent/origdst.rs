//! Where a redirected connection was going, and the listening socket for TPROXY.
//!
//! `REDIRECT` and `DNAT` rewrite the destination; the kernel's connection tracking remembers the original,
//! which `SO_ORIGINAL_DST` (`IP6T_SO_ORIGINAL_DST` for IPv6) reads back. `TPROXY` does not rewrite: the
//! accepted socket's local address *is* the original destination.

use std::io;
use std::net::SocketAddr;

use socket2::{Domain, Protocol, SockRef, Socket, Type};
use tokio::net::{TcpListener, TcpStream};

/// The destination the client chose: conntrack's record of it, or the local address when there is none
/// (TPROXY, or a client that connected to the listener directly).
pub(crate) fn original_dst(stream: &TcpStream) -> io::Result<SocketAddr> {
    let local = stream.local_addr()?;
    let sock = SockRef::from(stream);
    let original = if local.is_ipv4() {
        sock.original_dst_v4()
    } else {
        sock.original_dst_v6()
    };
    match original.ok().and_then(|a| a.as_socket()) {
        Some(addr) => Ok(unmap(addr)),
        None => Ok(local),
    }
}

/// An IPv4 destination seen through a dual-stack socket is written as IPv4.
fn unmap(addr: SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(v4.into(), v6.port()),
            None => addr,
        },
        v4 => v4,
    }
}

/// A listener for connections redirected by `REDIRECT`/`DNAT`, or with `tproxy` by `TPROXY` rules
/// (`IP_TRANSPARENT`, which needs `CAP_NET_ADMIN`).
pub(crate) fn bind(addr: SocketAddr, tproxy: bool) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    if tproxy {
        let set = if addr.is_ipv4() {
            socket.set_ip_transparent_v4(true)
        } else {
            socket.set_ip_transparent_v6(true)
        };
        set.map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot set IP_TRANSPARENT for TPROXY (needs CAP_NET_ADMIN): {e}"),
            )
        })?;
    }
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    TcpListener::from_std(socket.into())
}

#[cfg(test)]
#[path = "origdst_tests.rs"]
mod tests;
