//! Which IP addresses (and which host names) cordon may dial.
//!
//! This module is the single owner of cordon's knowledge about special IP
//! ranges, cloud metadata endpoints and its own listening sockets. Everything
//! else in the crate asks a [`Guard`] and never looks at address ranges itself,
//! so the policy lives (and is tested) in exactly one place.
//!
//! The checks are pure apart from one cheap local probe: deciding whether an
//! address belongs to this machine binds a UDP socket to it (no packets sent).

use crate::reason::Reason;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, LazyLock};

use ipnet::{IpNet, Ipv4Net};

/// Cloud metadata and credential endpoints.
///
/// Refused even when an `allow_cidrs` entry covers them, because handing an
/// agent the instance's cloud credentials is never what a broad CIDR exception
/// was meant to do. Only an exact `dangerous_allow_metadata` entry opens one.
pub(crate) const METADATA_ADDRESSES: [IpAddr; 8] = [
    // AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle, ... instance metadata.
    IpAddr::V4(Ipv4Addr::new(169, 254, 169, 254)),
    // AWS ECS task metadata and task-role credentials.
    IpAddr::V4(Ipv4Addr::new(169, 254, 170, 2)),
    // AWS EKS Pod Identity agent.
    IpAddr::V4(Ipv4Addr::new(169, 254, 170, 23)),
    // AWS instance metadata over IPv6.
    IpAddr::V6(Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254)),
    // AWS EKS Pod Identity agent over IPv6.
    IpAddr::V6(Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0023)),
    // Alibaba Cloud instance metadata.
    IpAddr::V4(Ipv4Addr::new(100, 100, 100, 200)),
    // Azure WireServer (a public address, so only this list catches it).
    IpAddr::V4(Ipv4Addr::new(168, 63, 129, 16)),
    // Oracle Cloud (classic) instance metadata.
    IpAddr::V4(Ipv4Addr::new(192, 0, 0, 192)),
];

/// Host names that reach metadata services or the local host, refused by
/// [`Guard::check_name`] before any DNS lookup (exact match).
///
/// Several are single labels that only resolve through the resolver's search
/// list (`metadata` -> `metadata.google.internal`, `kubernetes` -> the API
/// server), which is why they are listed on their own.
pub(crate) const METADATA_NAMES: [&str; 18] = [
    "metadata.google.internal",
    "metadata",
    "instance-data",
    "instance-data.ec2.internal",
    "metadata.tencentyun.com",
    "metadata.packet.net",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
    "host.docker.internal",
    "gateway.docker.internal",
    "host.containers.internal",
    "rancher-metadata",
    "localhost",
    "localhost.localdomain",
    "ip6-localhost",
    "ip6-loopback",
];

/// Name suffix refused by [`Guard::check_name`]: RFC 6761 reserves every
/// `*.localhost` name for the loopback interface.
const LOCALHOST_SUFFIX: &str = ".localhost";

/// Special-purpose ranges refused by default: `(CIDR, what it is)`.
///
/// Kept as text so the CIDR shown in a [`GuardRefusal`] is exactly what the table
/// says; [`SPECIAL_RANGES`] parses it once and a unit test proves that every
/// row parses, so the table cannot silently lose an entry.
const RANGE_TABLE: [(&str, &str); 35] = [
    ("0.0.0.0/8", "this network"),
    ("10.0.0.0/8", "private network"),
    ("100.64.0.0/10", "carrier-grade NAT"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private network"),
    ("192.0.0.0/24", "IETF protocol assignments"),
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "6to4 relay anycast"),
    ("192.168.0.0/16", "private network"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
    ("255.255.255.255/32", "broadcast"),
    ("168.63.129.16/32", "Azure WireServer"),
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("::/96", "IPv4-compatible"),
    ("::ffff:0:0/96", "IPv4-mapped"),
    ("64:ff9b::/96", "NAT64"),
    ("64:ff9b:1::/48", "local-use NAT64"),
    ("100::/64", "discard-only"),
    ("100:0:0:1::/64", "dummy IPv6 prefix"),
    ("2001::/23", "IETF protocol assignments"),
    // Inside 2001::/23; listed only so refusals name Teredo specifically.
    ("2001::/32", "Teredo"),
    ("2001:db8::/32", "documentation"),
    ("2002::/16", "6to4"),
    ("3fff::/20", "documentation"),
    ("5f00::/16", "SRv6 SIDs"),
    ("fc00::/7", "unique local"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"),
    ("ff00::/8", "multicast"),
];

/// One parsed row of [`RANGE_TABLE`].
#[derive(Debug)]
struct Special {
    net: IpNet,
    text: &'static str,
    what: &'static str,
}

/// [`RANGE_TABLE`] parsed once. Rows that fail to parse are dropped rather
/// than panicking; `tests::range_table_parses_completely` guards against that.
static SPECIAL_RANGES: LazyLock<Vec<Special>> = LazyLock::new(|| {
    RANGE_TABLE
        .iter()
        .filter_map(|&(text, what)| {
            let net = text.parse::<IpNet>().ok()?;
            Some(Special { net, text, what })
        })
        .collect()
});

/// Why cordon refuses to dial a host or address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuardRefusal {
    /// The host name is a cloud metadata or local-host name.
    #[error("{host} is a cloud metadata or local host name")]
    MetadataName {
        /// The refused host name, as given.
        host: String,
    },
    /// The address is a cloud metadata or credential endpoint.
    #[error("{addr} is a cloud metadata address")]
    MetadataAddress {
        /// The refused address.
        addr: IpAddr,
    },
    /// The address lies in a special-purpose range that is denied by default.
    #[error("{addr} is in {range} ({what})")]
    SpecialRange {
        /// The refused address.
        addr: IpAddr,
        /// The matching range in CIDR notation (longest match).
        range: &'static str,
        /// What the range is, in a few words.
        what: &'static str,
    },
    /// An IPv6 address embeds an IPv4 address that is itself refused.
    #[error("{outer} embeds IPv4 {embedded} ({via}): {inner}")]
    Embedded {
        /// The IPv6 address cordon was asked to dial.
        outer: Ipv6Addr,
        /// The IPv4 address found inside it.
        embedded: Ipv4Addr,
        /// The embedding mechanism, e.g. `"6to4"` or `"Teredo client"`.
        via: &'static str,
        /// Why the embedded IPv4 address is refused.
        inner: Box<GuardRefusal>,
    },
    /// The address is one of cordon's own listening sockets (a proxy loop).
    #[error("{addr} is cordon's own listening address")]
    SelfAddress {
        /// The refused socket address.
        addr: SocketAddr,
    },
}

impl GuardRefusal {
    /// The reason's code (see [`GuardRefusal::reason`]).
    #[must_use]
    pub fn code(&self) -> &'static str {
        self.reason().code()
    }

    /// Stable machine-readable reason for audit logs.
    ///
    /// One of `"metadata_name"`, `"metadata_address"`, `"special_range"` or
    /// `"self_address"`; an embedded refusal reports its inner reason, since
    /// what matters to an auditor is what was really being reached.
    #[must_use]
    pub(crate) fn reason(&self) -> Reason {
        match self {
            GuardRefusal::MetadataName { .. } => Reason::MetadataName,
            GuardRefusal::MetadataAddress { .. } => Reason::MetadataAddress,
            GuardRefusal::SpecialRange { .. } => Reason::SpecialRange,
            GuardRefusal::Embedded { inner, .. } => inner.reason(),
            GuardRefusal::SelfAddress { .. } => Reason::SelfAddress,
        }
    }
}

/// Whether `ip` (IPv4-mapped forms included) is in [`METADATA_ADDRESSES`].
///
/// Exposed so config validation can reject `dangerous_allow_metadata` entries
/// that are not metadata addresses (the guard ignores those).
#[must_use]
pub(crate) fn is_metadata_address(ip: IpAddr) -> bool {
    METADATA_ADDRESSES.contains(&ip.to_canonical())
}

/// Decides which hosts and addresses cordon may dial.
///
/// Cheap to clone: the configured lists are shared.
#[derive(Debug, Clone)]
pub struct Guard {
    allow_cidrs: Arc<[IpNet]>,
    dangerous_allow_metadata: Arc<[IpAddr]>,
    self_addrs: Arc<[SocketAddr]>,
}

impl Guard {
    /// Build a guard.
    ///
    /// * `allow_cidrs`: explicit exceptions to the special-range deny list
    ///   (`network.allow_cidrs`). They never open metadata addresses, embedded
    ///   IPv4 addresses they do not also cover, or cordon itself.
    /// * `dangerous_allow_metadata`: exact metadata addresses an operator opted
    ///   in to (`network.dangerous_allow_metadata`). Such an address is then
    ///   allowed outright (its special range is not consulted); entries that
    ///   are not in [`METADATA_ADDRESSES`] have no effect.
    /// * `self_addrs`: cordon's own listening socket addresses.
    #[must_use]
    pub fn new(allow_cidrs: Vec<IpNet>, dangerous_allow_metadata: Vec<IpAddr>, self_addrs: Vec<SocketAddr>) -> Guard {
        Guard {
            allow_cidrs: allow_cidrs.into_iter().map(canonical_net).collect(),
            dangerous_allow_metadata: dangerous_allow_metadata
                .into_iter()
                .map(|ip| ip.to_canonical())
                // Only metadata addresses can be opted in; anything else here
                // must not turn into a silent extra allow rule.
                .filter(|ip| METADATA_ADDRESSES.contains(ip))
                .collect(),
            self_addrs: self_addrs.into(),
        }
    }

    /// Refuse metadata and local host *names* before any DNS lookup.
    ///
    /// `host` should already be normalised (lowercase ASCII, no trailing dot).
    /// Literal IP addresses are not recognised here; they go to
    /// [`Guard::check_addr`]. `allow_cidrs` never applies to names.
    ///
    /// Only the exact Kubernetes API names are refused, not every
    /// `*.svc.cluster.local`: other in-cluster services resolve to cluster IPs
    /// that [`Guard::check_addr`] refuses by default, and an operator who adds
    /// the service CIDR to `allow_cidrs` expects those names to work.
    pub(crate) fn check_name(&self, host: &str) -> Result<(), GuardRefusal> {
        // SECURITY: a caller that skipped normalisation must not slip
        // "METADATA.google.internal." past the exact-match list.
        let name = host.trim_end_matches('.');
        // SECURITY: cloud metadata / local names reach credentials or the
        // host itself even before their addresses are checked.
        let listed = METADATA_NAMES.iter().any(|m| m.eq_ignore_ascii_case(name));
        // SECURITY: every *.localhost name resolves to loopback (RFC 6761).
        let localhost = name
            .len()
            .checked_sub(LOCALHOST_SUFFIX.len())
            .and_then(|start| name.get(start..))
            .is_some_and(|tail| tail.eq_ignore_ascii_case(LOCALHOST_SUFFIX));
        if listed || localhost {
            return Err(GuardRefusal::MetadataName { host: host.to_owned() });
        }
        Ok(())
    }

    /// Classify one resolved (or literal) address and port that cordon is
    /// about to dial.
    ///
    /// Address rules are checked first, then the self (loop) check, which
    /// applies even inside an allowed CIDR.
    pub fn check_addr(&self, addr: SocketAddr) -> Result<(), GuardRefusal> {
        self.check_ip(addr.ip())?;
        if self.is_self(addr) {
            return Err(GuardRefusal::SelfAddress { addr });
        }
        Ok(())
    }

    /// Address rules for one IP, including every IPv4 address embedded in it.
    fn check_ip(&self, ip: IpAddr) -> Result<(), GuardRefusal> {
        match ip {
            IpAddr::V4(v4) => self.check_plain(IpAddr::V4(v4)),
            IpAddr::V6(v6) => {
                // SECURITY: ::ffff:169.254.169.254 dials 169.254.169.254 on a
                // dual-stack socket; judge it exactly as that IPv4 address.
                if let Some(v4) = v6.to_ipv4_mapped() {
                    return self
                        .check_plain(IpAddr::V4(v4))
                        .map_err(|inner| embedded(v6, v4, "IPv4-mapped", inner));
                }
                // SECURITY: an allowed outer prefix (e.g. allow 2002::/16) must
                // not carry a tunnel to a refused IPv4 destination, so every
                // embedded address is judged on its own.
                for (via, v4) in embedded_ipv4(v6) {
                    self.check_plain(IpAddr::V4(v4))
                        .map_err(|inner| embedded(v6, v4, via, inner))?;
                }
                self.check_plain(IpAddr::V6(v6))
            }
        }
    }

    /// Metadata, allow-list and special-range rules for a single address,
    /// without looking inside it.
    fn check_plain(&self, ip: IpAddr) -> Result<(), GuardRefusal> {
        if METADATA_ADDRESSES.contains(&ip) {
            if self.dangerous_allow_metadata.contains(&ip) {
                return Ok(());
            }
            // SECURITY: metadata endpoints hand out cloud credentials; no
            // allow_cidrs entry (not even 0.0.0.0/0) opens them.
            return Err(GuardRefusal::MetadataAddress { addr: ip });
        }
        if self.allow_cidrs.iter().any(|net| net.contains(&ip)) {
            return Ok(());
        }
        // SECURITY: SSRF into private, loopback, link-local and other
        // special-purpose networks reachable from cordon's host.
        if let Some(special) = special_range(ip) {
            return Err(GuardRefusal::SpecialRange {
                addr: ip,
                range: special.text,
                what: special.what,
            });
        }
        Ok(())
    }
}

/// `GuardRefusal::Embedded` constructor, to keep the call sites short.
fn embedded(outer: Ipv6Addr, embedded: Ipv4Addr, via: &'static str, inner: GuardRefusal) -> GuardRefusal {
    GuardRefusal::Embedded {
        outer,
        embedded,
        via,
        inner: Box::new(inner),
    }
}

/// Longest-prefix match of `ip` in the default deny table.
fn special_range(ip: IpAddr) -> Option<&'static Special> {
    SPECIAL_RANGES
        .iter()
        .filter(|s| s.net.contains(&ip))
        .max_by_key(|s| s.net.prefix_len())
}

/// Every IPv4 address an IPv6 address carries through a transition
/// mechanism that would deliver traffic to that IPv4 host. IPv4-mapped
/// addresses are handled separately (they *are* their IPv4 address).
fn embedded_ipv4(v6: Ipv6Addr) -> Vec<(&'static str, Ipv4Addr)> {
    let s = v6.segments();
    let v4 = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    let mut found = Vec::new();
    // SECURITY: IPv4-compatible ::a.b.c.d (deprecated, still routed by some
    // stacks); :: and ::1 are the unspecified and loopback addresses instead.
    if s[..6] == [0; 6] && !v6.is_unspecified() && !v6.is_loopback() {
        found.push(("IPv4-compatible", v4(s[6], s[7])));
    }
    // SECURITY: NAT64 64:ff9b::/96 translates to the last 32 bits.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        found.push(("NAT64", v4(s[6], s[7])));
    }
    // SECURITY: 6to4 2002:AABB:CCDD::/48 tunnels to IPv4 AA.BB.CC.DD.
    if s[0] == 0x2002 {
        found.push(("6to4", v4(s[1], s[2])));
    }
    if s[0] == 0x2001 && s[1] == 0 {
        // SECURITY: Teredo server IPv4 sits in bits 32..64.
        found.push(("Teredo server", v4(s[2], s[3])));
        // SECURITY: Teredo client IPv4 is the last 32 bits, bit-inverted.
        found.push(("Teredo client", v4(!s[6], !s[7])));
    }
    found
}

/// Rewrite an IPv4-mapped IPv6 CIDR (e.g. `::ffff:127.0.0.0/104`) as the IPv4
/// CIDR it means, because mapped addresses are judged as IPv4.
fn canonical_net(net: IpNet) -> IpNet {
    if let IpNet::V6(v6) = net
        && let Some(prefix) = v6.prefix_len().checked_sub(96)
        && let Some(v4) = v6.network().to_ipv4_mapped()
        && let Ok(v4net) = Ipv4Net::new(v4, prefix)
    {
        return IpNet::V4(v4net);
    }
    net
}

#[path = "ipguard_own.rs"]
mod own;
pub(crate) use own::lands_on;

#[path = "ipguard_ranges.rs"]
mod ranges;
pub(crate) use ranges::{SpecialOverlap, is_metadata_net, special_overlaps};

#[cfg(test)]
#[path = "ipguard_tests.rs"]
mod tests;
