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

impl Listen {
    /// Every TCP or UDP address cordon listens on, named by its key, for checks of overlap.
    pub(crate) fn all(&self) -> Vec<(&'static str, SocketAddr)> {
        let mut all = vec![("listen.proxy", self.proxy)];
        all.extend(self.admin.map(|a| ("listen.admin", a)));
        all.extend(self.transparent.map(|a| ("listen.transparent", a)));
        all.extend(self.preview.map(|a| ("listen.preview", a)));
        all.extend(self.console.map(|a| ("listen.console", a)));
        all
    }

    /// Whether `/v1` is served on the admin listener: over TLS, or on a loopback address. Off loopback without
    /// TLS only `/healthz`, `/readyz` and `/metrics` are (probes and scrapers carry no token).
    pub(crate) fn admin_api_served(&self, tls: bool) -> bool {
        tls || self.admin.is_some_and(|a| a.ip().is_loopback())
    }
}
