//! The address guard (`src/net/ipguard.rs`) on arbitrary IPv4 and IPv6 addresses, differentially against a
//! reference written here from the IANA IPv4 and IPv6 Special-Purpose Address Registries.
//!
//! Checks that the guard never panics, and that:
//! - without `allow_cidrs`, every address it allows is globally reachable per the reference: in no registry
//!   entry marked "Globally Reachable: False" (nor "N/A", nor the ranges README.md's "Security model" refuses
//!   besides: multicast, 6to4, Teredo, NAT64, 192.88.99.0/24, ...), and, for an IPv6 address that carries an
//!   IPv4 address (IPv4-compatible, NAT64, 6to4, Teredo server and client), with every carried IPv4 address
//!   globally reachable too; an IPv4-mapped address is judged as its IPv4 address (as README.md says);
//! - with arbitrary `allow_cidrs`, every address it allows is no metadata address (README's list), carries
//!   none, and it and every IPv4 address it carries is globally reachable or inside an allowed range.
//!
//! The other direction need not hold: cordon may refuse more than the registries do (e.g. 64:ff9b::/96 and
//! the metadata addresses are globally reachable there).
#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use cordon::fuzzing::ip_guard;
use ipnet::IpNet;
use libfuzzer_sys::fuzz_target;

/// IANA IPv4 Special-Purpose Address Registry entries not globally reachable (False or N/A), as of 2025.
const IANA_V4: &[&str] = &[
    "0.0.0.0/8",          // "This network" (RFC 791)
    "0.0.0.0/32",         // "This host on this network" (RFC 1122)
    "10.0.0.0/8",         // Private-Use (RFC 1918)
    "100.64.0.0/10",      // Shared Address Space (RFC 6598)
    "127.0.0.0/8",        // Loopback (RFC 1122)
    "169.254.0.0/16",     // Link Local (RFC 3927)
    "172.16.0.0/12",      // Private-Use (RFC 1918)
    "192.0.0.0/24",       // IETF Protocol Assignments (RFC 6890); .9 and .10 are reachable, refused anyway
    "192.0.0.0/29",       // IPv4 Service Continuity Prefix (RFC 7335)
    "192.0.0.8/32",       // IPv4 dummy address (RFC 7600)
    "192.0.0.170/32",     // NAT64/DNS64 Discovery (RFC 8880)
    "192.0.0.171/32",     // NAT64/DNS64 Discovery (RFC 8880)
    "192.0.2.0/24",       // Documentation (TEST-NET-1, RFC 5737)
    "192.88.99.0/24",     // Deprecated 6to4 Relay Anycast (RFC 7526): N/A
    "192.168.0.0/16",     // Private-Use (RFC 1918)
    "198.18.0.0/15",      // Benchmarking (RFC 2544)
    "198.51.100.0/24",    // Documentation (TEST-NET-2, RFC 5737)
    "203.0.113.0/24",     // Documentation (TEST-NET-3, RFC 5737)
    "240.0.0.0/4",        // Reserved (RFC 1112)
    "255.255.255.255/32", // Limited Broadcast (RFC 919)
];

/// IANA IPv6 Special-Purpose Address Registry entries not globally reachable (False or N/A), as of 2025.
const IANA_V6: &[&str] = &[
    "::1/128",        // Loopback Address (RFC 4291)
    "::/128",         // Unspecified Address (RFC 4291)
    "::ffff:0:0/96",  // IPv4-mapped Address (RFC 4291)
    "64:ff9b:1::/48", // IPv4-IPv6 Translation, local use (RFC 8215)
    "100::/64",       // Discard-Only Address Block (RFC 6666)
    "100:0:0:1::/64", // Dummy IPv6 Prefix (RFC 9780)
    "2001::/23",      // IETF Protocol Assignments (RFC 2928)
    "2001::/32",      // TEREDO (RFC 4380): N/A
    "2001:2::/48",    // Benchmarking (RFC 5180)
    "2001:10::/28",   // Deprecated ORCHID (RFC 4843)
    "2001:db8::/32",  // Documentation (RFC 3849)
    "2002::/16",      // 6to4 (RFC 3056): N/A
    "3fff::/20",      // Documentation (RFC 9637)
    "5f00::/16",      // Segment Routing SIDs (RFC 9602)
    "fc00::/7",       // Unique-Local (RFC 4193)
    "fe80::/10",      // Link-Local Unicast (RFC 4291)
];

/// Ranges outside those registries that README.md's "Security model" refuses.
const README_EXTRA: &[&str] = &[
    "224.0.0.0/4",  // IPv4 multicast
    "::/96",        // IPv4-compatible (deprecated, RFC 4291)
    "64:ff9b::/96", // NAT64 well-known prefix (reachable per IANA; cordon judges what it carries by refusing it)
    "fec0::/10",    // site-local (deprecated, RFC 3879)
    "ff00::/8",     // IPv6 multicast
];

/// README.md's metadata addresses: refused whatever `allow_cidrs` says.
const METADATA: &[&str] = &[
    "169.254.169.254",
    "169.254.170.2",
    "169.254.170.23",
    "fd00:ec2::254",
    "fd00:ec2::23",
    "100.100.100.200",
    "168.63.129.16",
    "192.0.0.192",
];

static NOT_GLOBAL: LazyLock<Vec<IpNet>> = LazyLock::new(|| {
    IANA_V4
        .iter()
        .chain(IANA_V6)
        .chain(README_EXTRA)
        .map(|n| n.parse().unwrap())
        .collect()
});

static METADATA_IPS: LazyLock<Vec<IpAddr>> = LazyLock::new(|| METADATA.iter().map(|a| a.parse().unwrap()).collect());

/// An address read from the input: a kind byte (odd: IPv6), then 4 or 16 bytes (zeros past the end).
fn address(data: &mut &[u8]) -> IpAddr {
    let mut take = |n: usize| {
        let mut out = [0u8; 16];
        let (head, rest) = data.split_at(n.min(data.len()));
        out[..head.len()].copy_from_slice(head);
        *data = rest;
        out
    };
    if take(1)[0] & 1 == 1 {
        IpAddr::V6(Ipv6Addr::from(take(16)))
    } else {
        let b = take(4);
        IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3]))
    }
}

/// Every IPv4 address `v6` carries, by the mechanisms README.md names.
fn carried(v6: Ipv6Addr) -> Vec<Ipv4Addr> {
    let o = v6.octets();
    let last = Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    let s = v6.segments();
    let mut out = Vec::new();
    if o[..10] == [0; 10] && o[10..12] == [0xff, 0xff] {
        out.push(last); // IPv4-mapped ::ffff:a.b.c.d
    }
    if o[..12] == [0; 12] && !v6.is_unspecified() && !v6.is_loopback() {
        out.push(last); // IPv4-compatible ::a.b.c.d (:: and ::1 are themselves)
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        out.push(last); // NAT64
    }
    if s[0] == 0x2002 {
        out.push(Ipv4Addr::new(o[2], o[3], o[4], o[5])); // 6to4
    }
    if s[..2] == [0x2001, 0] {
        out.push(Ipv4Addr::new(o[4], o[5], o[6], o[7])); // Teredo server
        out.push(Ipv4Addr::new(!o[12], !o[13], !o[14], !o[15])); // Teredo client (inverted)
    }
    out
}

/// Whether the reference holds `ip` for globally reachable.
fn global(ip: IpAddr) -> bool {
    let listed = |ip: IpAddr| NOT_GLOBAL.iter().any(|n| n.contains(&ip));
    match ip {
        IpAddr::V4(_) => !listed(ip),
        // README: an IPv4-mapped address is judged as the IPv4 address it is.
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => global(IpAddr::V4(v4)),
            None => !listed(ip) && carried(v6).into_iter().all(|v4| !listed(IpAddr::V4(v4))),
        },
    }
}

fuzz_target!(|data: &[u8]| {
    // The address to check, then up to four `allow_cidrs` entries: an address and a prefix length byte.
    let mut data = data;
    let ip = address(&mut data);
    if ip_guard(ip, &[]).is_ok() {
        assert!(global(ip), "{ip} allowed, but not globally reachable per IANA");
    }
    let mut allow: Vec<IpNet> = Vec::new();
    while !data.is_empty() && allow.len() < 4 {
        let net = address(&mut data);
        let len = data.first().copied().unwrap_or(0);
        data = data.get(1..).unwrap_or(&[]);
        let max = if net.is_ipv4() { 32 } else { 128 };
        allow.extend(IpNet::new(net, len % (max + 1)).ok().map(|n| n.trunc()));
    }
    if allow.is_empty() || ip_guard(ip, &allow).is_err() {
        return;
    }
    let covered = |ip: IpAddr| {
        allow
            .iter()
            .any(|n| n.contains(&ip) || matches!(ip, IpAddr::V4(v4) if n.contains(&IpAddr::V6(v4.to_ipv6_mapped()))))
    };
    let metadata = |ip: IpAddr| METADATA_IPS.contains(&ip.to_canonical());
    assert!(!metadata(ip), "metadata address {ip} allowed with {allow:?}");
    let reachable = |ip: IpAddr| {
        let listed = NOT_GLOBAL.iter().any(|n| n.contains(&ip));
        !listed || covered(ip)
    };
    match ip {
        IpAddr::V4(_) => assert!(reachable(ip), "{ip} allowed outside {allow:?}"),
        IpAddr::V6(v6) => {
            if v6.to_ipv4_mapped().is_none() {
                assert!(reachable(ip), "{ip} allowed outside {allow:?}");
            }
            for v4 in carried(v6) {
                let v4 = IpAddr::V4(v4);
                assert!(
                    !metadata(v4),
                    "{ip} allowed with {allow:?}, carrying metadata address {v4}"
                );
                assert!(reachable(v4), "{ip} allowed with {allow:?}, carrying {v4} outside them");
            }
        }
    }
});
