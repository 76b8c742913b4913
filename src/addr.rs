//! Addresses that travel with a connection, each a type of its own so that one is never passed for another.

use std::fmt;
use std::net::{IpAddr, SocketAddr};

/// The address of the client (the sandbox side) of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ClientAddr(pub SocketAddr);

impl ClientAddr {
    /// The client's IP address (what source ranges and throttles key on).
    pub(crate) fn ip(self) -> IpAddr {
        self.0.ip()
    }
}

impl fmt::Display for ClientAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Where a connection redirected to the transparent listener was going before the kernel redirected it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct OriginalDst(pub SocketAddr);

impl OriginalDst {
    /// The destination port (the port transparent traffic is judged on).
    pub(crate) fn port(self) -> u16 {
        self.0.port()
    }
}

impl fmt::Display for OriginalDst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}
