//! `listen:`: where cordon listens, as written and validated; no two listeners share an address.

use std::net::SocketAddr;

use schemars::JsonSchema;
use serde::Deserialize;

use super::errors::Errors;
use super::fields::{flag, socket_addr};
use super::scalars::Flag;
use super::shapes;

/// `listen:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawListen {
    /// Explicit proxy listener, `host:port`.
    #[schemars(with = "Option<shapes::HostPort>")]
    pub(crate) proxy: Option<String>,
    /// Admin API listener, `host:port`.
    #[schemars(with = "Option<shapes::HostPort>")]
    pub(crate) admin: Option<String>,
    /// Transparent listener (REDIRECT / TPROXY), `host:port`.
    #[schemars(with = "Option<shapes::HostPort>")]
    pub(crate) transparent: Option<String>,
    /// Set `IP_TRANSPARENT` on the transparent listener, for TPROXY rules.
    pub(crate) transparent_tproxy: Option<Flag>,
    /// DNS responder (UDP and TCP), `host:port`.
    #[schemars(with = "Option<shapes::HostPort>")]
    pub(crate) dns: Option<String>,
    /// Preview listener (HTTPS, or HTTP on loopback), `host:port`.
    #[schemars(with = "Option<shapes::HostPort>")]
    pub(crate) preview: Option<String>,
    /// The console's own listener (HTTPS, or HTTP on loopback), `host:port`; else it is on the admin listener.
    #[schemars(with = "Option<shapes::HostPort>")]
    pub(crate) console: Option<String>,
}

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

/// `listen:`: each address as written (`listen.proxy` defaults to 127.0.0.1:3128; the others are off unless set).
pub(super) fn listen(errs: &mut Errors, raw: RawListen) -> Listen {
    let listen = Listen {
        proxy: socket_addr(errs, "listen.proxy", raw.proxy.as_deref(), "127.0.0.1:3128"),
        admin: raw
            .admin
            .as_deref()
            .map(|a| socket_addr(errs, "listen.admin", Some(a), "")),
        transparent: None,
        transparent_tproxy: false,
        dns: None,
        preview: None,
        console: None,
    };
    let optional = |errs: &mut Errors, path: &str, raw: Option<&str>| raw.map(|a| socket_addr(errs, path, Some(a), ""));
    Listen {
        transparent: optional(errs, "listen.transparent", raw.transparent.as_deref()),
        transparent_tproxy: flag(errs, "listen.transparent_tproxy", raw.transparent_tproxy).unwrap_or(false),
        dns: optional(errs, "listen.dns", raw.dns.as_deref()),
        preview: optional(errs, "listen.preview", raw.preview.as_deref()),
        console: optional(errs, "listen.console", raw.console.as_deref()),
        ..listen
    }
}

/// What the listeners say together, once the admin listener's TLS (`admin_tls`: `admin.tls` is set) and the
/// console (`console`: `console:` is set) are known: `/v1` off loopback without TLS, TPROXY without a
/// transparent listener, two listeners on one address.
pub(super) fn check(errs: &mut Errors, listen: &Listen, admin_tls: bool, console: bool) {
    if let Some(admin) = listen.admin
        && !listen.admin_api_served(admin_tls)
    {
        errs.warn(
            "listen.admin",
            format!(
                "{admin} is not a loopback address and admin.tls is not set: only /healthz, /readyz and /metrics \
             are served there; /v1{} answer 403 admin_needs_tls (set admin.tls to serve them)",
                if console && listen.console.is_none() {
                    " and the console"
                } else {
                    ""
                }
            ),
        );
    }
    if listen.transparent_tproxy && listen.transparent.is_none() {
        errs.at(
            "listen.transparent_tproxy",
            "is set but listen.transparent is not; give the transparent listener an address",
        );
    }
    // TCP listeners may not share an address (the DNS responder's TCP side is checked with them).
    let tcp = listen.all();
    for (i, (name, addr)) in tcp.iter().enumerate() {
        if let Some((other, _)) = tcp[..i].iter().find(|(_, a)| a == addr && addr.port() != 0) {
            errs.at(
                *name,
                format!("is {other}'s address too ({addr}); each listener needs its own"),
            );
        }
    }
}
