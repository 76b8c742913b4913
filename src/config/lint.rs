//! The classic mistakes `cordon check` warns about, each naming what it opens (or why it opens nothing): a
//! wildcard directly under a public suffix (`*.com`, `*.co.uk`, `*.github.io`: the Public Suffix List, from the
//! `psl` crate), a range that holds whole private, loopback or link-local ranges in `network.allow_cidrs` or in
//! a rule's `cidrs`, and a rule that can never match (a name or range the address guard refuses whatever a rule
//! says). None is an error: each can be meant, and `cordon check --strict` makes them errors.

use std::collections::BTreeMap;

use ipnet::IpNet;

use super::errors::Errors;
use super::network::Network;
use crate::net::ipguard::{SpecialOverlap, is_metadata_net, special_overlaps};
use crate::policy::Policy;
use crate::policy::allowlist::HostPattern;

/// Warn about `network.allow_cidrs` entries that open whole special ranges, or nothing at all.
pub(super) fn network(errs: &mut Errors, network: &Network) {
    for (i, net) in network.allow_cidrs.iter().enumerate() {
        let at = format!("network.allow_cidrs[{i}]");
        let found = special_overlaps(*net);
        let whole: Vec<&SpecialOverlap> = found.iter().filter(|o| o.whole).collect();
        if found.is_empty() {
            errs.warn(
                at,
                format!(
                    "{net} opens nothing: no address in it is refused by the guard (allow_cidrs only makes \
                     exceptions to the private and special ranges), so this entry has no effect"
                ),
            );
        } else if !whole.is_empty() {
            errs.warn(
                at,
                format!(
                    "{net} opens all of {} to every sandbox whose rules reach an address there (a name that \
                     resolves into it, or a rule's cidrs); cloud metadata addresses stay refused. Name the hosts \
                     you mean, as narrow a range as will do",
                    listed(&whole)
                ),
            );
        }
    }
}

/// Warn about each policy's rules: wildcards under public suffixes, ranges over special ranges, rules that can
/// never match.
pub(super) fn policies(errs: &mut Errors, policies: &BTreeMap<String, Policy>, network: &Network) {
    let guard = crate::net::Guard::new(Vec::new(), Vec::new(), Vec::new());
    for (name, policy) in policies {
        for (i, rule) in policy.rules.iter().enumerate() {
            let at = format!("policies.{name}.allow[{i}]");
            match &rule.host {
                Some(HostPattern::Subdomains(suffix)) => {
                    if let Some(section) = public_suffix(suffix) {
                        errs.warn(
                            format!("{at}.host"),
                            format!(
                                "\"*.{suffix}\" allows every name under {suffix}, a public suffix ({section}): \
                                 names there belong to whoever registers them, so this rule lets the sandbox reach \
                                 anyone's host. Name the domains you mean (\"*.example.{suffix}\")"
                            ),
                        );
                    }
                    if guard.check_name(&format!("x.{suffix}")).is_err() {
                        errs.warn(
                            format!("{at}.host"),
                            format!(
                                "can never match: every name under {suffix} is a local-host name, which the \
                                 address guard refuses whatever a rule says"
                            ),
                        );
                    }
                }
                Some(HostPattern::Exact(host)) if guard.check_name(host).is_err() => errs.warn(
                    format!("{at}.host"),
                    format!(
                        "can never match: {host} is a cloud metadata or local-host name, which the address guard \
                         refuses whatever a rule says"
                    ),
                ),
                _ => {}
            }
            for (j, net) in rule.cidrs.iter().enumerate() {
                if let Some(message) = rule_range(*net, network) {
                    errs.warn(format!("{at}.cidrs[{j}]"), message);
                }
            }
        }
    }
}

/// What to say of a rule's range: that it can never match, or which special ranges it holds wholly.
fn rule_range(net: IpNet, network: &Network) -> Option<String> {
    let opened = |part: IpNet| {
        network
            .allow_cidrs
            .iter()
            .any(|a| a.contains(&part) || part.contains(a))
    };
    if is_metadata_net(net) {
        let dangerous = network.dangerous_allow_metadata.iter().any(|ip| net.contains(ip));
        return (!dangerous).then(|| {
            format!(
                "can never match: {net} is a cloud metadata address, which the address guard refuses whatever a \
                 rule (or allow_cidrs) says; only network.dangerous_allow_metadata opens one"
            )
        });
    }
    let found = special_overlaps(net);
    if let Some(inside) = found.iter().find(|o| o.within)
        && !opened(net)
    {
        return Some(format!(
            "can never match: {net} lies in {} ({}), which the address guard refuses whatever a rule says; open \
             the addresses you mean in network.allow_cidrs",
            inside.range, inside.what
        ));
    }
    let whole: Vec<&SpecialOverlap> = found.iter().filter(|o| o.whole).collect();
    if whole.is_empty() {
        return None;
    }
    let everything = if net.prefix_len() == 0 {
        format!(
            "allows every {} address a sandbox names (the whole internet); ",
            family(net)
        )
    } else {
        String::new()
    };
    let (open, shut): (Vec<&SpecialOverlap>, Vec<&SpecialOverlap>) = whole
        .into_iter()
        .partition(|o| o.range.parse::<IpNet>().is_ok_and(opened));
    let reached = || {
        format!(
            "{}, which network.allow_cidrs opens: this rule reaches them",
            listed(&open)
        )
    };
    let refused = || format!("{}, which the guard refuses whatever this rule says", listed(&shut));
    Some(match (open.is_empty(), shut.is_empty()) {
        (true, _) => format!("{everything}{net} holds all of {}", refused()),
        (false, true) => format!("{everything}{net} holds all of {}", reached()),
        (false, false) => format!("{everything}{net} holds all of {}; and of {}", reached(), refused()),
    })
}

/// Which section of the Public Suffix List `name` is a suffix of, when it is one.
fn public_suffix(name: &str) -> Option<&'static str> {
    let suffix = psl::suffix(name.as_bytes())?;
    if suffix.as_bytes() != name.as_bytes() || !suffix.is_known() {
        return None;
    }
    Some(match suffix.typ() {
        Some(psl::Type::Private) => {
            "in the Public Suffix List's private section: each name under it is a site of its own"
        }
        _ => "in the Public Suffix List",
    })
}

fn family(net: IpNet) -> &'static str {
    match net {
        IpNet::V4(_) => "IPv4",
        IpNet::V6(_) => "IPv6",
    }
}

/// `10.0.0.0/8 (private network), 127.0.0.0/8 (loopback)`, at most eight, then how many more: the ranges of this
/// host and its networks first (private, loopback, link-local, unique local, carrier-grade NAT, site-local), the
/// rest in the table's order.
fn listed(ranges: &[&SpecialOverlap]) -> String {
    const LOCAL: [&str; 6] = [
        "private network",
        "loopback",
        "link-local",
        "unique local",
        "carrier-grade NAT",
        "site-local",
    ];
    let mut ranges = ranges.to_vec();
    ranges.sort_by_key(|o| !LOCAL.contains(&o.what));
    let mut words: Vec<String> = ranges
        .iter()
        .take(8)
        .map(|o| format!("{} ({})", o.range, o.what))
        .collect();
    if ranges.len() > 8 {
        words.push(format!("{} more special ranges", ranges.len() - 8));
    }
    words.join(", ")
}
