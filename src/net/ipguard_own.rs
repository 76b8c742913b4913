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
        let ip = addr.ip().to_canonical();
        self.self_addrs.iter().any(|own| {
            if own.port() != addr.port() {
                return false;
            }
            let own_ip = own.ip().to_canonical();
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
        })
    }
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
mod tests {
    #![expect(clippy::expect_used, reason = "tests")]

    use std::net::SocketAddr;

    use super::super::{Guard, GuardRefusal};

    fn sa(s: &str) -> SocketAddr {
        s.parse().expect(s)
    }

    #[test]
    fn a_sandboxs_address_may_be_private_but_never_metadata_or_cordon_itself() {
        let g = Guard::new(Vec::new(), Vec::new(), vec![sa("127.0.0.1:9090"), sa("0.0.0.0:3128")]);
        // Private, loopback and link-local addresses are what sandboxes have: no special-range refusal.
        for ok in [
            "10.0.0.7:5173",
            "127.0.0.9:3000",
            "[fd00::7]:8080",
            "169.254.10.1:80",
            "127.0.0.1:9091",
        ] {
            assert_eq!(g.check_sandbox_addr(sa(ok)), Ok(()), "{ok}");
        }
        // Metadata, in every form that reaches it, even with an operator's dangerous opt-in for dialling.
        let opted = Guard::new(Vec::new(), vec!["169.254.169.254".parse().expect("ip")], Vec::new());
        for bad in [
            "169.254.169.254:80",
            "[::ffff:169.254.169.254]:80",
            "[2002:a9fe:a9fe::1]:80",
            "[64:ff9b::a9fe:a9fe]:80",
            "[fd00:ec2::254]:80",
        ] {
            for guard in [&g, &opted] {
                let refused = guard.check_sandbox_addr(sa(bad)).expect_err(bad);
                assert_eq!(refused.code(), "metadata_address", "{bad}");
            }
        }
        // cordon's own listeners, also through a wildcard listener or the unspecified address.
        for own in [
            "127.0.0.1:9090",
            "127.0.0.5:3128",
            "0.0.0.0:9090",
            "[::ffff:127.0.0.1]:9090",
        ] {
            assert_eq!(
                g.check_sandbox_addr(sa(own)),
                Err(GuardRefusal::SelfAddress { addr: sa(own) }),
                "{own}"
            );
        }
    }
}
