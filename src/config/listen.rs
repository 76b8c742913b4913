//! `listen:`, validated: where cordon listens.

use std::net::SocketAddr;

/// `listen:`
#[derive(Debug, Clone)]
pub(crate) struct Listen {
    /// The explicit proxy listener.
    pub(crate) proxy: SocketAddr,
    /// The admin API listener, if any.
    pub(crate) admin: Option<SocketAddr>,
    /// The transparent listener, if any: connections redirected to it by the kernel (`REDIRECT`, `TPROXY`),
    /// their sandbox known by source address.
    pub(crate) transparent: Option<SocketAddr>,
    /// Whether the transparent listener is opened with `IP_TRANSPARENT` (TPROXY; needs `CAP_NET_ADMIN`).
    pub(crate) transparent_tproxy: bool,
    /// The DNS responder's address (UDP and TCP), if any.
    pub(crate) dns: Option<SocketAddr>,
    /// The preview listener, if any: people opening preview URLs into sandboxes.
    pub(crate) preview: Option<SocketAddr>,
    /// The console's own listener, if any (else the console, when configured, is on the admin listener).
    pub(crate) console: Option<SocketAddr>,
}

/// One kind of listener a configuration opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listener {
    /// `listen.proxy`.
    Proxy,
    /// `listen.admin`.
    Admin,
    /// `listen.transparent`.
    Transparent,
    /// `listen.dns` (UDP and TCP on the same address).
    Dns,
    /// `listen.preview`.
    Preview,
    /// `listen.console`.
    Console,
}

impl Listener {
    /// The key that sets it.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Listener::Proxy => "listen.proxy",
            Listener::Admin => "listen.admin",
            Listener::Transparent => "listen.transparent",
            Listener::Dns => "listen.dns",
            Listener::Preview => "listen.preview",
            Listener::Console => "listen.console",
        }
    }
}

impl Listen {
    /// Every address cordon listens on (TCP, and for DNS UDP as well), with its kind: the one list of what a
    /// configuration opens, which the overlap check, the running proxy and `cordon explain` all read.
    pub(crate) fn listeners(&self) -> Vec<(Listener, SocketAddr)> {
        let mut all = vec![(Listener::Proxy, self.proxy)];
        all.extend(self.admin.map(|a| (Listener::Admin, a)));
        all.extend(self.transparent.map(|a| (Listener::Transparent, a)));
        all.extend(self.preview.map(|a| (Listener::Preview, a)));
        all.extend(self.console.map(|a| (Listener::Console, a)));
        all.extend(self.dns.map(|a| (Listener::Dns, a)));
        all
    }

    /// Every address cordon listens on, named by its key, for checks of overlap.
    pub(crate) fn all(&self) -> Vec<(&'static str, SocketAddr)> {
        self.listeners().into_iter().map(|(l, a)| (l.key(), a)).collect()
    }

    /// cordon's own addresses, which its address guard refuses to dial (`self_address`): each listener's
    /// address as `bound` says it was opened (the port the kernel chose for a port 0), or as configured where
    /// `bound` does not know it (a dry run: `cordon explain`, which opens nothing).
    pub(crate) fn own(&self, bound: impl Fn(Listener) -> Option<SocketAddr>) -> Vec<SocketAddr> {
        self.listeners()
            .into_iter()
            .map(|(l, configured)| bound(l).unwrap_or(configured))
            .collect()
    }

    /// Whether `/v1` is served on the admin listener: over TLS, or on a loopback address. Off loopback without
    /// TLS only `/healthz`, `/readyz` and `/metrics` are (probes and scrapers carry no token).
    pub(crate) fn admin_api_served(&self, tls: bool) -> bool {
        tls || self.admin.is_some_and(|a| a.ip().is_loopback())
    }
}
