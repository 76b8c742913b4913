//! What a configured range reaches of the special ranges the guard refuses: for `cordon check`'s warnings about
//! `network.allow_cidrs` and rules' `cidrs`, from the same table the guard judges addresses by.

use ipnet::IpNet;

use super::{METADATA_ADDRESSES, SPECIAL_RANGES};

/// One special range a configured range overlaps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SpecialOverlap {
    /// The range as the guard's table writes it (e.g. `10.0.0.0/8`).
    pub(crate) range: &'static str,
    /// What it is (e.g. `private network`).
    pub(crate) what: &'static str,
    /// Whether the configured range holds all of it.
    pub(crate) whole: bool,
    /// Whether the configured range lies inside it.
    pub(crate) within: bool,
}

/// The special ranges `net` overlaps, most specific last as in the table; IPv4-mapped forms are judged as the
/// IPv4 ranges they map, as the guard judges a mapped address. A range nested in another that `net` also holds
/// wholly is not listed on its own (`2001::/32` inside `2001::/23`).
pub(crate) fn special_overlaps(net: IpNet) -> Vec<SpecialOverlap> {
    let net = canonical(net);
    let mut found: Vec<SpecialOverlap> = SPECIAL_RANGES
        .iter()
        .filter(|s| overlaps(net, s.net))
        .map(|s| SpecialOverlap {
            range: s.text,
            what: s.what,
            whole: net.contains(&s.net),
            within: s.net.contains(&net),
        })
        .collect();
    let wholes: Vec<IpNet> = found
        .iter()
        .filter(|o| o.whole)
        .filter_map(|o| o.range.parse().ok())
        .collect();
    found.retain(|o| {
        let Ok(own) = o.range.parse::<IpNet>() else {
            return true;
        };
        !(o.whole && wholes.iter().any(|w| *w != own && w.contains(&own)))
    });
    found
}

/// Whether `net` is exactly one cloud metadata address (as a /32 or /128).
pub(crate) fn is_metadata_net(net: IpNet) -> bool {
    let net = canonical(net);
    net.prefix_len() == net.max_prefix_len() && METADATA_ADDRESSES.contains(&net.addr())
}

/// An IPv4-mapped IPv6 range (`::ffff:a.b.c.d/n`, n >= 96) as the IPv4 range it maps.
fn canonical(net: IpNet) -> IpNet {
    match net {
        IpNet::V6(v6) if v6.prefix_len() >= 96 => match v6.addr().to_ipv4_mapped() {
            Some(v4) => ipnet::Ipv4Net::new(v4, v6.prefix_len() - 96)
                .map(IpNet::V4)
                .unwrap_or(net),
            None => net,
        },
        other => other,
    }
}

/// Whether two ranges share an address (ranges of prefixes either nest or do not meet).
fn overlaps(a: IpNet, b: IpNet) -> bool {
    a.contains(&b) || b.contains(&a)
}

#[cfg(test)]
#[path = "ipguard_ranges_tests.rs"]
mod tests;
