//! cordon's own sockets, and the one address the control plane holds for a sandbox.
//!
//! A child of `ipguard`, so it reads the guard's lists directly.

use std::net::{IpAddr, SocketAddr, UdpSocket};

use super::{Guard, GuardRefusal, METADATA_ADDRESSES, embedded_ipv4};

impl Guard {
    /// Judge the address of a sandbox's own dev server (a preview), which the control plane holds for it.
    ///
    /// Such an address is private by nature, so the special ranges do not apply here; metadata addresses (in
    /// any form that reaches them) and cordon's own listeners stay refused whatever the store says.
    pub(crate) fn check_sandbox_addr(&self, addr: SocketAddr) -> Result<(), GuardRefusal> {
        let ip = addr.ip().to_canonical();
        let embedded = match ip {
            IpAddr::V6(v6) => embedded_ipv4(v6).into_iter().map(|(_, v4)| IpAddr::V4(v4)).collect(),
            IpAddr::V4(_) => Vec::new(),
        };
        // SECURITY: a sandbox registered at a metadata address (an operator's slip, or a control-plane token
        // in the wrong hands) must not turn the preview listener into a way to the cloud's credentials.
        if let Some(metadata) = std::iter::once(ip)
            .chain(embedded)
            .find(|a| METADATA_ADDRESSES.contains(a))
        {
            return Err(GuardRefusal::MetadataAddress { addr: metadata });
        }
        // SECURITY: nor into cordon's own listeners (the admin API makes links and sandboxes).
        if self.is_self(addr) {
            return Err(GuardRefusal::SelfAddress { addr });
        }
        Ok(())
    }

    /// Whether dialing `addr` would connect back to one of cordon's own
    /// listeners.
    pub(super) fn is_self(&self, addr: SocketAddr) -> bool {
        self.self_addrs
            .iter()
            .any(|own| own.port() == addr.port() && lands_on(own.ip(), addr))
    }
}

/// Whether a connection to `addr` reaches a socket listening on `own` (an IP, on `addr`'s port): `cordon
/// explain` asks it of a listener configured with port 0, whose port only a running cordon knows.
pub(crate) fn lands_on(own: IpAddr, addr: SocketAddr) -> bool {
    let ip = addr.ip().to_canonical();
    let own_ip = own.to_canonical();
    // SECURITY: proxy loop via our own socket; compare canonical IP and
    // port only, so a mapped form, scope id or flow label cannot hide
    // an exact match (SocketAddrV6 equality includes those).
    if own_ip == ip {
        return true;
    }
    // SECURITY: proxy loop via connect() to 0.0.0.0 or ::, which the
    // kernel sends to the local host (loopback), where any of our
    // listeners on this port may be waiting.
    if ip.is_unspecified() {
        return true;
    }
    // SECURITY: proxy loop via a wildcard listener, reached through
    // any local address (127.0.0.2, the host's LAN IP, ...). Either
    // wildcard family counts, since a [::] listener is usually
    // dual-stack.
    own_ip.is_unspecified() && is_local_address(addr)
}

/// Whether `addr`'s IP belongs to this machine: loopback, or an address a
/// socket can be bound to. Binding a UDP socket is a local syscall that sends
/// nothing; the scope id is kept so IPv6 link-local addresses bind correctly.
pub(super) fn is_local_address(addr: SocketAddr) -> bool {
    let ip = addr.ip().to_canonical();
    if ip.is_loopback() {
        return true;
    }
    let probe = match (ip, addr) {
        (IpAddr::V6(v6), SocketAddr::V6(orig)) => {
            SocketAddr::V6(std::net::SocketAddrV6::new(v6, 0, 0, orig.scope_id()))
        }
        _ => SocketAddr::new(ip, 0),
    };
    UdpSocket::bind(probe).is_ok()
}

#[cfg(test)]
#[path = "ipguard_own_tests.rs"]
mod tests;
