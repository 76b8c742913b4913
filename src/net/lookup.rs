//! Names to addresses, before the guard judges them.
//!
//! By default an asynchronous DNS resolver (hickory) that reads the system's `/etc/resolv.conf` (name
//! servers, search domains, `ndots`, timeouts) and `/etc/hosts`, and caches each answer for its TTL, so a
//! new upstream connection to a name seen within the TTL costs a cache hit instead of a round trip, and no
//! lookup ever occupies one of tokio's blocking threads. `network.resolver: system` uses the C library's
//! `getaddrinfo` instead (on tokio's blocking threads, uncached), for hosts whose names come from nsswitch
//! sources a DNS resolver does not read (LDAP, mDNS, ...).
//!
//! Either way the caller judges every address found, and dials the address it judged.

use std::net::IpAddr;
use std::sync::{Arc, OnceLock};

use hickory_resolver::TokioResolver;
use hickory_resolver::config::LookupIpStrategy;

/// Which resolver turns names into addresses (`network.resolver`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResolverKind {
    /// hickory's DNS resolver on the system's configuration, with a TTL cache (the default).
    #[default]
    Dns,
    /// The C library's `getaddrinfo`, uncached.
    System,
}

impl ResolverKind {
    /// The configuration's spelling.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            ResolverKind::Dns => "dns",
            ResolverKind::System => "system",
        }
    }
}

/// Names to addresses for one configuration generation: the kind it asks for, and hickory's resolver (made
/// on first use, inside the runtime that will drive it; `None` when the system's configuration could not be
/// read, and then `getaddrinfo` is used). Clones share the resolver and its cache; a reload starts afresh.
#[derive(Clone, Default)]
pub(crate) struct Resolver {
    kind: ResolverKind,
    dns: Arc<OnceLock<Option<TokioResolver>>>,
}

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolver")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl Resolver {
    /// A resolver of this kind.
    pub(crate) fn new(kind: ResolverKind) -> Resolver {
        Resolver {
            kind,
            dns: Arc::default(),
        }
    }

    fn dns(&self) -> Option<&TokioResolver> {
        if self.kind == ResolverKind::System {
            return None;
        }
        self.dns
            .get_or_init(|| match build() {
                Ok(resolver) => Some(resolver),
                Err(error) => {
                    tracing::warn!(%error, "the system's resolver configuration could not be read; names are resolved with getaddrinfo");
                    None
                }
            })
            .as_ref()
    }

    /// Every address of `name` (normalised, not an address literal), in the resolver's order.
    pub(crate) async fn addresses(&self, name: &str) -> Result<Vec<IpAddr>, String> {
        // SECURITY: a number is an address in disguise: it is turned into that address here, exactly as the
        // C library would, and judged by the guard as such; it is never sent to a DNS server as a name.
        if let Some(ip) = numeric(name) {
            return Ok(vec![ip]);
        }
        match self.dns() {
            Some(resolver) => {
                let found = resolver.lookup_ip(name).await.map_err(|e| e.to_string())?;
                Ok(found.iter().collect())
            }
            None => {
                let found = tokio::net::lookup_host((name, 0)).await.map_err(|e| e.to_string())?;
                Ok(found.map(|a| a.ip()).collect())
            }
        }
    }
}

fn build() -> Result<TokioResolver, String> {
    let mut builder = TokioResolver::builder_tokio().map_err(|e| e.to_string())?;
    // A and AAAA both asked, IPv4 listed first: every address is judged by the guard either way, and the
    // dialler tries them in order.
    builder.options_mut().ip_strategy = LookupIpStrategy::Ipv4AndIpv6;
    builder.build().map_err(|e| e.to_string())
}

/// The IPv4 address a name written as a number stands for (`2852039166`, `0xa9fea9fe`, `0251.0376.0251.0376`,
/// `0x7f.1`), as the C library and browsers read it (the WHATWG URL standard's IPv4 parser, from the `url`
/// crate); `None` for a real name.
fn numeric(name: &str) -> Option<IpAddr> {
    match url::Host::parse(name) {
        Ok(url::Host::Ipv4(v4)) => Some(IpAddr::V4(v4)),
        _ => None,
    }
}

#[cfg(test)]
#[path = "lookup_tests.rs"]
mod tests;
