//! What a sandbox CA may sign for: the scope derived from a policy, the X.509 name constraints written
//! for it, and the scope read back from a certificate on disk.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use rcgen::{CidrSubnet, GeneralSubtree, NameConstraints};
use rustls_pki_types::DnsName;
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;

use crate::tls::ca::error::CaError;

/// The name a leaf certificate is made for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LeafName {
    /// A DNS name, e.g. `api.example.com`.
    Dns(String),
    /// An IP address, for clients that connect to one.
    Ip(IpAddr),
}

impl LeafName {
    /// The name for a host as a client wrote it (a CONNECT authority's host or an SNI value): an IP address if it
    /// parses as one (with or without IPv6 brackets), else a DNS name. Does not validate; see
    /// [`LeafName::normalized`].
    #[cfg(test)]
    pub(crate) fn from_host(host: &str) -> LeafName {
        let unbracketed = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
        match unbracketed.parse::<IpAddr>() {
            Ok(ip) => LeafName::Ip(ip),
            Err(_) => LeafName::Dns(host.to_owned()),
        }
    }

    /// The canonical form: a DNS name lowercased without its trailing dot (a DNS name that is really an IP
    /// address becomes [`LeafName::Ip`]), refused if it cannot be a certificate's DNS name (wildcards included).
    pub(crate) fn normalized(&self) -> Result<LeafName, CaError> {
        match self {
            LeafName::Ip(ip) => Ok(LeafName::Ip(*ip)),
            LeafName::Dns(host) => {
                let lower = host.to_ascii_lowercase();
                let name = lower.strip_suffix('.').unwrap_or(&lower);
                if let Ok(ip) = name.parse::<IpAddr>() {
                    return Ok(LeafName::Ip(ip));
                }
                DnsName::try_from(name).map_err(|_| CaError::InvalidName {
                    name: host.clone(),
                    reason: "not a valid DNS name",
                })?;
                Ok(LeafName::Dns(name.to_owned()))
            }
        }
    }
}

impl fmt::Display for LeafName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeafName::Dns(name) => f.write_str(name),
            LeafName::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// What a CA may sign for, derived by the caller from the sandbox's policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// No name constraints (e.g. a report-mode policy that may allow anything).
    Unconstrained,
    /// Permitted DNS subtrees (each "example.com" permits the name and every name under it, RFC 5280) and
    /// permitted IP ranges. When `ips` is empty, ALL IP addresses are excluded (0.0.0.0/0 and ::/0 as excluded
    /// subtrees), because RFC 5280 leaves a name type without permitted subtrees unconstrained: without the
    /// exclusion a stolen CA key could still sign for any IP address. Likewise, when `dns` is empty, all DNS names
    /// are excluded (the empty DNS name as excluded subtree, which matches every name).
    ///
    /// Entries must be plain names: a wildcard such as `*.example.com` is refused; reduce it to `example.com`.
    Names {
        /// DNS subtrees, e.g. `example.com`.
        dns: Vec<String>,
        /// IP ranges; an IPv4-only list excludes every IPv6 address and vice versa (one name form, RFC 5280).
        ips: Vec<IpNet>,
    },
}

impl Scope {
    /// The canonical form of this scope: DNS names lowercased without a trailing dot, IP ranges truncated to their
    /// network address, both sorted and deduplicated. This is the form written into certificates and returned by
    /// [`SandboxCa::scope`], so `ca.scope() == &wanted.normalized()?` tells whether a CA matches a policy.
    pub(crate) fn normalized(&self) -> Result<Scope, CaError> {
        match self {
            Scope::Unconstrained => Ok(Scope::Unconstrained),
            Scope::Names { dns, ips } => {
                let mut dns = dns
                    .iter()
                    .map(|entry| normalize_dns_subtree(entry))
                    .collect::<Result<Vec<_>, _>>()?;
                dns.sort();
                dns.dedup();
                let mut ips: Vec<IpNet> = ips.iter().map(IpNet::trunc).collect();
                ips.sort();
                ips.dedup();
                Ok(Scope::Names { dns, ips })
            }
        }
    }

    /// What `wanted` (a policy's scope) allows that a CA with this scope cannot sign for, each as a person reads
    /// it (`app.test`, `10.0.0.0/8`, `every name`); empty when this scope covers it. A CA made for more than the
    /// policy allows now covers it (the policy refuses the rest).
    pub(crate) fn uncovered(&self, wanted: &Scope) -> Vec<String> {
        let Scope::Names { dns: mine, ips: my_ips } = self else {
            return Vec::new();
        };
        match wanted.normalized() {
            Ok(Scope::Names { dns, ips }) => {
                let mut missing: Vec<String> = dns
                    .iter()
                    .filter(|name| !mine.iter().any(|base| dns_in_subtree(name, base)))
                    .cloned()
                    .collect();
                missing.extend(
                    ips.iter()
                        .filter(|net| !my_ips.iter().any(|mine| mine.contains(*net)))
                        .map(|net| net.to_string()),
                );
                missing
            }
            // Unconstrained (report mode, or a name a certificate cannot carry), or not a scope at all.
            _ => vec!["every name (the policy needs an unconstrained CA)".to_owned()],
        }
    }

    /// Whether a certificate for `name` issued under this scope passes RFC 5280 name-constraint checks. cordon
    /// uses it to refuse minting leaves that clients would reject anyway.
    pub(crate) fn permits(&self, name: &LeafName) -> bool {
        match (self, name) {
            (Scope::Unconstrained, _) => true,
            (Scope::Names { dns, .. }, LeafName::Dns(host)) => dns.iter().any(|base| dns_in_subtree(host, base)),
            (Scope::Names { ips, .. }, LeafName::Ip(addr)) => ips.iter().any(|net| net.contains(addr)),
        }
    }
}

/// `example.com` as a DNS subtree contains `example.com` and `api.example.com`, but not `badexample.com`.
fn dns_in_subtree(host: &str, base: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host).as_bytes();
    let base = base.as_bytes();
    if host.len() == base.len() {
        return host.eq_ignore_ascii_case(base);
    }
    host.len() > base.len()
        && host[host.len() - base.len()..].eq_ignore_ascii_case(base)
        && host[host.len() - base.len() - 1] == b'.'
}

fn normalize_dns_subtree(entry: &str) -> Result<String, CaError> {
    let lower = entry.to_ascii_lowercase();
    let name = lower.strip_suffix('.').unwrap_or(&lower);
    if name.parse::<IpAddr>().is_ok() {
        return Err(CaError::InvalidScope {
            entry: entry.to_owned(),
            reason: "an IP address belongs in the IP ranges, not the DNS names",
        });
    }
    DnsName::try_from(name).map_err(|_| CaError::InvalidScope {
        entry: entry.to_owned(),
        reason: "not a DNS name (wildcards must be reduced to their parent domain, e.g. example.com)",
    })?;
    Ok(name.to_owned())
}

/// The name-constraints extension cordon writes for `scope` (already normalized).
pub(super) fn name_constraints(scope: &Scope) -> Option<NameConstraints> {
    let Scope::Names { dns, ips } = scope else {
        return None;
    };
    let mut permitted_subtrees: Vec<GeneralSubtree> = dns.iter().cloned().map(GeneralSubtree::DnsName).collect();
    permitted_subtrees.extend(
        ips.iter()
            .map(|net| GeneralSubtree::IpAddress(CidrSubnet::from_addr_prefix(net.network(), net.prefix_len()))),
    );
    let mut excluded_subtrees = Vec::new();
    if dns.is_empty() {
        // SECURITY: a CA with only IP subtrees would otherwise sign for any DNS name (RFC 5280: a name form
        // without permitted subtrees is unconstrained); the empty DNS name matches every name.
        excluded_subtrees.push(GeneralSubtree::DnsName(String::new()));
    }
    if ips.is_empty() {
        // SECURITY: a stolen CA key with only DNS subtrees could otherwise sign for any IP address.
        excluded_subtrees.push(GeneralSubtree::IpAddress(CidrSubnet::V4([0; 4], [0; 4])));
        excluded_subtrees.push(GeneralSubtree::IpAddress(CidrSubnet::V6([0; 16], [0; 16])));
    }
    Some(NameConstraints {
        permitted_subtrees,
        excluded_subtrees,
    })
}

/// Reads the scope back from a CA certificate, refusing constraints that cordon would not have written for it.
pub(super) fn scope_from_cert(x509: &X509Certificate<'_>, path: &Path) -> Result<Scope, CaError> {
    let unsupported = |reason: String| CaError::UnsupportedConstraints {
        path: path.to_path_buf(),
        reason,
    };
    let nc = x509
        .name_constraints()
        .map_err(|e| unsupported(format!("cannot parse them: {e}")))?;
    let Some(nc) = nc else {
        return Ok(Scope::Unconstrained);
    };
    let permitted = subtrees_from_cert(nc.value.permitted_subtrees.as_deref()).map_err(&unsupported)?;
    let excluded = subtrees_from_cert(nc.value.excluded_subtrees.as_deref()).map_err(&unsupported)?;
    let mut dns = Vec::new();
    let mut ips = Vec::new();
    for subtree in &permitted {
        match subtree {
            GeneralSubtree::DnsName(name) => dns.push(name.clone()),
            GeneralSubtree::IpAddress(cidr) => ips.push(ipnet_from_cidr(*cidr).map_err(&unsupported)?),
            _ => {
                return Err(unsupported(
                    "a permitted subtree is neither a DNS name nor an IP range".into(),
                ));
            }
        }
    }
    let scope = Scope::Names { dns, ips };
    // SECURITY: `scope()` must describe what clients enforce; a certificate edited to, say, drop the IP exclusion
    // would otherwise be reported as IP-free while signing for every IP address.
    if scope.normalized().ok().as_ref() != Some(&scope)
        || name_constraints(&scope)
            != Some(NameConstraints {
                permitted_subtrees: permitted,
                excluded_subtrees: excluded,
            })
    {
        return Err(unsupported(
            "they differ from what cordon writes for the names they permit".into(),
        ));
    }
    Ok(scope)
}

fn subtrees_from_cert(
    subtrees: Option<&[x509_parser::extensions::GeneralSubtree<'_>]>,
) -> Result<Vec<GeneralSubtree>, String> {
    subtrees
        .unwrap_or_default()
        .iter()
        .map(|subtree| match &subtree.base {
            GeneralName::DNSName(name) => Ok(GeneralSubtree::DnsName((*name).to_owned())),
            GeneralName::IPAddress(bytes) => match bytes.len() {
                8 => {
                    let (addr, mask) = bytes.split_at(4);
                    Ok(GeneralSubtree::IpAddress(CidrSubnet::V4(
                        addr.try_into().map_err(|_| "bad IPv4 subtree")?,
                        mask.try_into().map_err(|_| "bad IPv4 subtree")?,
                    )))
                }
                32 => {
                    let (addr, mask) = bytes.split_at(16);
                    Ok(GeneralSubtree::IpAddress(CidrSubnet::V6(
                        addr.try_into().map_err(|_| "bad IPv6 subtree")?,
                        mask.try_into().map_err(|_| "bad IPv6 subtree")?,
                    )))
                }
                n => Err(format!("an IP subtree of {n} bytes")),
            },
            other => Err(format!("an unsupported subtree {other}")),
        })
        .collect()
}

fn ipnet_from_cidr(cidr: CidrSubnet) -> Result<IpNet, String> {
    let net = match cidr {
        CidrSubnet::V4(addr, mask) => {
            let mask = u32::from_be_bytes(mask);
            if mask.leading_ones() != mask.count_ones() {
                return Err(format!("a non-contiguous IPv4 mask {mask:#010x}"));
            }
            Ipv4Net::new(Ipv4Addr::from(addr), mask.count_ones() as u8).map(IpNet::V4)
        }
        CidrSubnet::V6(addr, mask) => {
            let mask = u128::from_be_bytes(mask);
            if mask.leading_ones() != mask.count_ones() {
                return Err("a non-contiguous IPv6 mask".into());
            }
            Ipv6Net::new(Ipv6Addr::from(addr), mask.count_ones() as u8).map(IpNet::V6)
        }
    };
    net.map_err(|e| format!("a bad IP range ({e})"))
}

#[cfg(test)]
#[path = "scope_tests.rs"]
mod tests;
