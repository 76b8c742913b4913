//! Resolve a target, classify every address, and dial only an address that passed.
//!
//! The address that was checked is the address that is dialled: the resolved `SocketAddr` is passed to
//! `connect`, never the name, so there is no second lookup for a rebinding DNS server to answer
//! differently. A name with any refused address is refused as a whole.

use crate::reason::Reason;
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use tokio::net::TcpStream;

use super::ipguard::{Guard, GuardRefusal};
use super::lookup::{Resolver, ResolverKind};
use crate::target::{Host, Target};

/// Why no connection was made.
#[derive(Debug, thiserror::Error)]
pub enum DialError {
    /// The guard refused the name or one of its addresses.
    #[error("{0}")]
    Refused(#[from] GuardRefusal),
    /// The name did not resolve.
    #[error("{target} did not resolve")]
    Resolve {
        /// The destination.
        target: Target,
        /// The resolver's message (for the audit record).
        detail: String,
    },
    /// The name resolved to nothing.
    #[error("{target} has no address")]
    NoAddress {
        /// The destination.
        target: Target,
    },
    /// Every address refused the connection.
    #[error("could not connect to {target}")]
    Connect {
        /// The destination.
        target: Target,
        /// The last address tried.
        addr: SocketAddr,
        /// Why.
        source: io::Error,
    },
    /// Connecting took longer than `timeouts.connect`.
    #[error("connecting to {0} timed out")]
    Timeout(Target),
}

impl DialError {
    /// A copy (the I/O error inside is not `Clone`), for errors that come back shared through the pool.
    pub(crate) fn duplicate(&self) -> DialError {
        match self {
            DialError::Refused(r) => DialError::Refused(r.clone()),
            DialError::Resolve { target, detail } => DialError::Resolve {
                target: target.clone(),
                detail: detail.clone(),
            },
            DialError::NoAddress { target } => DialError::NoAddress { target: target.clone() },
            DialError::Connect { target, addr, source } => DialError::Connect {
                target: target.clone(),
                addr: *addr,
                source: io::Error::new(source.kind(), source.to_string()),
            },
            DialError::Timeout(t) => DialError::Timeout(t.clone()),
        }
    }

    /// Stable reason code.
    pub(crate) fn reason(&self) -> Reason {
        match self {
            DialError::Refused(r) => r.reason(),
            DialError::Resolve { .. } => Reason::ResolveFailed,
            DialError::NoAddress { .. } => Reason::NoAddress,
            DialError::Connect { .. } => Reason::ConnectFailed,
            DialError::Timeout(_) => Reason::ConnectTimeout,
        }
    }
}

/// What resolution found, each address with the guard's verdict (for `cordon explain`).
#[derive(Debug)]
pub struct ResolvedAddrs {
    /// Each resolved address and whether the guard lets it be dialled.
    pub(crate) addrs: Vec<(SocketAddr, Result<(), GuardRefusal>)>,
}

/// Resolves through static overrides or the configured resolver, guards, and dials.
#[derive(Debug, Clone)]
pub struct Dialer {
    guard: Guard,
    hosts: HashMap<String, Vec<IpAddr>>,
    connect_timeout: Duration,
    resolver: Resolver,
}

impl Dialer {
    /// A dialer with these overrides and this guard.
    pub fn new(guard: Guard, hosts: HashMap<String, Vec<IpAddr>>, connect_timeout: Duration) -> Dialer {
        Dialer {
            guard,
            hosts,
            connect_timeout,
            resolver: Resolver::default(),
        }
    }

    /// The same dialer, resolving names with `kind` (`network.resolver`).
    #[must_use]
    pub fn with_resolver(mut self, kind: ResolverKind) -> Dialer {
        self.resolver = Resolver::new(kind);
        self
    }

    /// The guard in use.
    pub(crate) fn guard(&self) -> &Guard {
        &self.guard
    }

    /// Every address of `target`, unchecked.
    async fn lookup(&self, target: &Target) -> Result<Vec<SocketAddr>, DialError> {
        let port = target.port;
        let name = match &target.host {
            Host::V4(ip) => return Ok(vec![SocketAddr::new(IpAddr::V4(*ip), port)]),
            Host::V6(ip) => return Ok(vec![SocketAddr::new(IpAddr::V6(*ip), port)]),
            Host::Name(name) => name,
        };
        // SECURITY: metadata and local names (metadata.google.internal, localhost, ...) are refused
        // before any lookup, so an override or a resolver cannot make them reachable.
        self.guard.check_name(name)?;
        if let Some(ips) = self.hosts.get(name) {
            return Ok(ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect());
        }
        // The resolver: a name written as a number becomes its address there, which is why the guard judges
        // what comes back, never the string.
        let found = self
            .resolver
            .addresses(name)
            .await
            .map_err(|detail| DialError::Resolve {
                target: target.clone(),
                detail,
            })?;
        let mut addrs: Vec<SocketAddr> = Vec::with_capacity(found.len());
        for ip in found {
            let a = SocketAddr::new(ip, port);
            if !addrs.contains(&a) {
                addrs.push(a);
            }
        }
        Ok(addrs)
    }

    /// Resolve and classify without refusing (for explanations).
    pub(crate) async fn explain(&self, target: &Target) -> Result<ResolvedAddrs, DialError> {
        let addrs = self.lookup(target).await?;
        Ok(ResolvedAddrs {
            addrs: addrs.into_iter().map(|a| (a, self.guard.check_addr(a))).collect(),
        })
    }

    /// Resolve and check every address; any refused address refuses the name.
    pub async fn resolve(&self, target: &Target) -> Result<Vec<SocketAddr>, DialError> {
        let addrs = self.lookup(target).await?;
        if addrs.is_empty() {
            return Err(DialError::NoAddress { target: target.clone() });
        }
        for a in &addrs {
            // SECURITY: DNS answers mixing a public and a private address (rebinding, split answers) are
            // refused whole, so which address a retry picks can never matter.
            self.guard.check_addr(*a)?;
        }
        Ok(addrs)
    }

    /// The addresses of `name`, every one passed by the guard (any refused refuses the name), for the DNS
    /// responder: the same answer a dial would use.
    pub(crate) async fn addresses(&self, name: &str) -> Result<Vec<IpAddr>, DialError> {
        let target = Target {
            host: Host::Name(name.to_string()),
            port: 0,
        };
        Ok(self.resolve(&target).await?.into_iter().map(|a| a.ip()).collect())
    }

    /// Resolve, check, and connect to the first address that answers. Returns the stream and the address.
    pub(crate) async fn dial(&self, target: &Target) -> Result<(TcpStream, SocketAddr), DialError> {
        let addrs = self.resolve(target).await?;
        let mut last: Option<(SocketAddr, io::Error)> = None;
        for addr in addrs {
            match tokio::time::timeout(self.connect_timeout, TcpStream::connect(addr)).await {
                Ok(Ok(stream)) => {
                    let _ = stream.set_nodelay(true);
                    return Ok((stream, addr));
                }
                Ok(Err(e)) => last = Some((addr, e)),
                Err(_) => last = Some((addr, io::Error::new(io::ErrorKind::TimedOut, "connect timed out"))),
            }
        }
        match last {
            Some((_, e)) if e.kind() == io::ErrorKind::TimedOut => Err(DialError::Timeout(target.clone())),
            Some((addr, source)) => Err(DialError::Connect {
                target: target.clone(),
                addr,
                source,
            }),
            None => Err(DialError::NoAddress { target: target.clone() }),
        }
    }
}
