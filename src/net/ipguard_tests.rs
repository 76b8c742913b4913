//! Table tests for the IP guard.
#![expect(clippy::expect_used, reason = "tests")]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6};

use super::own::is_local_address;
use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().expect(s)
}

fn sa(s: &str) -> SocketAddr {
    SocketAddr::new(ip(s), 443)
}

fn guard(allow: &[&str], dangerous: &[&str], selfs: &[&str]) -> Guard {
    Guard::new(
        allow.iter().map(|s| s.parse().expect(s)).collect(),
        dangerous.iter().map(|s| ip(s)).collect(),
        selfs.iter().map(|s| s.parse().expect(s)).collect(),
    )
}

#[test]
fn range_table_parses_completely() {
    assert_eq!(SPECIAL_RANGES.len(), RANGE_TABLE.len());
    for s in SPECIAL_RANGES.iter() {
        // Host bits set would make the displayed CIDR misleading.
        assert_eq!(s.net, s.net.trunc(), "{} is not a network address", s.text);
    }
}

#[test]
fn guard_is_shareable() {
    fn check<T: Clone + std::fmt::Debug + Send + Sync>() {}
    check::<Guard>();
    check::<GuardRefusal>();
}

#[test]
fn every_default_range_refused() {
    // (address inside, expected longest-match range, expected label)
    let cases = [
        ("0.0.0.0", "0.0.0.0/8", "this network"),
        ("0.255.255.255", "0.0.0.0/8", "this network"),
        ("10.0.0.1", "10.0.0.0/8", "private network"),
        ("10.255.255.255", "10.0.0.0/8", "private network"),
        ("100.64.0.0", "100.64.0.0/10", "carrier-grade NAT"),
        ("100.127.255.255", "100.64.0.0/10", "carrier-grade NAT"),
        ("127.0.0.1", "127.0.0.0/8", "loopback"),
        ("127.255.0.1", "127.0.0.0/8", "loopback"),
        ("169.254.0.1", "169.254.0.0/16", "link-local"),
        ("172.16.0.1", "172.16.0.0/12", "private network"),
        ("172.31.255.255", "172.16.0.0/12", "private network"),
        ("192.0.0.1", "192.0.0.0/24", "IETF protocol assignments"),
        ("192.0.2.1", "192.0.2.0/24", "documentation"),
        ("192.88.99.1", "192.88.99.0/24", "6to4 relay anycast"),
        ("192.168.1.1", "192.168.0.0/16", "private network"),
        ("198.18.0.1", "198.18.0.0/15", "benchmarking"),
        ("198.19.255.255", "198.18.0.0/15", "benchmarking"),
        ("198.51.100.1", "198.51.100.0/24", "documentation"),
        ("203.0.113.1", "203.0.113.0/24", "documentation"),
        ("224.0.0.1", "224.0.0.0/4", "multicast"),
        ("239.255.255.255", "224.0.0.0/4", "multicast"),
        ("240.0.0.1", "240.0.0.0/4", "reserved"),
        ("255.255.255.254", "240.0.0.0/4", "reserved"),
        ("255.255.255.255", "255.255.255.255/32", "broadcast"),
        ("::", "::/128", "unspecified"),
        ("::1", "::1/128", "loopback"),
        // Outer range refused even though the embedded 8.8.8.8 is public.
        ("::808:808", "::/96", "IPv4-compatible"),
        ("64:ff9b::808:808", "64:ff9b::/96", "NAT64"),
        ("64:ff9b:1::1", "64:ff9b:1::/48", "local-use NAT64"),
        ("100::1", "100::/64", "discard-only"),
        ("2001:100::1", "2001::/23", "IETF protocol assignments"),
        ("2001:0:808:808::f7f7:f7f7", "2001::/32", "Teredo"),
        ("2001:db8::1", "2001:db8::/32", "documentation"),
        ("2002:808:808::1", "2002::/16", "6to4"),
        ("3fff::1", "3fff::/20", "documentation"),
        ("3fff:fff::1", "3fff::/20", "documentation"),
        ("5f00::1", "5f00::/16", "SRv6 SIDs"),
        ("fc00::1", "fc00::/7", "unique local"),
        ("fdff::1", "fc00::/7", "unique local"),
        ("fe80::1", "fe80::/10", "link-local"),
        ("fec0::1", "fec0::/10", "site-local"),
        ("ff02::1", "ff00::/8", "multicast"),
    ];
    let g = guard(&[], &[], &[]);
    for (addr, range, what) in cases {
        let want = GuardRefusal::SpecialRange {
            addr: ip(addr),
            range,
            what,
        };
        assert_eq!(g.check_addr(sa(addr)), Err(want), "{addr}");
    }
}

#[test]
fn table_only_ranges_match() {
    // 168.63.129.16 is also a metadata address and ::ffff:0:0/96 is always
    // canonicalised to IPv4 first, so check_addr never reports these rows;
    // the table itself must still hold them.
    for (addr, range) in [
        ("168.63.129.16", "168.63.129.16/32"),
        ("::ffff:1.2.3.4", "::ffff:0:0/96"),
    ] {
        assert_eq!(special_range(ip(addr)).map(|s| s.text), Some(range));
    }
    let g = guard(&[], &[], &[]);
    assert_eq!(
        g.check_addr(sa("168.63.129.16")).map_err(|r| r.code()),
        Err("metadata_address")
    );
}

#[test]
fn just_outside_default_ranges_allowed() {
    let g = guard(&[], &[], &[]);
    for addr in [
        "1.0.0.0",
        "9.255.255.255",
        "11.0.0.0",
        "100.63.255.255",
        "100.128.0.0",
        "126.255.255.255",
        "128.0.0.0",
        "169.253.255.255",
        "169.255.0.0",
        "172.15.255.255",
        "172.32.0.0",
        "191.255.255.255",
        "192.0.1.0",
        "192.0.3.0",
        "192.88.98.255",
        "192.88.100.0",
        "192.167.255.255",
        "192.169.0.0",
        "198.17.255.255",
        "198.20.0.0",
        "198.51.99.255",
        "198.51.101.0",
        "203.0.112.255",
        "203.0.114.0",
        "223.255.255.255",
        "168.63.129.15",
        "168.63.129.17",
        "::1:0:0:0",
        "64:ff9b::1:0:0",
        "64:ff9b:2::1",
        // Past 100::/64 (discard-only) and 100:0:0:1::/64 (dummy prefix).
        "100:0:0:2::1",
        "2001:200::1",
        "2001:db9::1",
        "2003::1",
        "3fff:1000::1",
        "5f01::1",
        "fbff:ffff::1",
        "fe7f::1",
    ] {
        assert_eq!(g.check_addr(sa(addr)), Ok(()), "{addr}");
    }
}

#[test]
fn public_addresses_allowed() {
    let g = guard(&[], &[], &[]);
    for addr in ["8.8.8.8", "1.1.1.1", "2606:4700::1111", "::ffff:8.8.8.8"] {
        assert_eq!(g.check_addr(sa(addr)), Ok(()), "{addr}");
    }
}

#[test]
fn metadata_refused_even_when_all_allowed() {
    let g = guard(&["0.0.0.0/0", "::/0"], &[], &[]);
    for addr in METADATA_ADDRESSES {
        let want = GuardRefusal::MetadataAddress { addr };
        assert_eq!(g.check_addr(SocketAddr::new(addr, 80)), Err(want));
    }
    // The IPv4-mapped form is the same address.
    assert_eq!(
        g.check_addr(sa("::ffff:169.254.169.254")).map_err(|r| r.code()),
        Err("metadata_address")
    );
}

#[test]
fn dangerous_allow_metadata_opens_exactly_that_address() {
    for addr in METADATA_ADDRESSES {
        let g = Guard::new(vec![], vec![addr], vec![]);
        assert_eq!(g.check_addr(SocketAddr::new(addr, 80)), Ok(()), "{addr}");
        for other in METADATA_ADDRESSES.iter().filter(|o| **o != addr) {
            assert_eq!(
                g.check_addr(SocketAddr::new(*other, 80)).map_err(|r| r.code()),
                Err("metadata_address")
            );
        }
    }
    // Given in mapped form, it is still recognised, and opens the mapped dial.
    let g = guard(&[], &["::ffff:169.254.169.254"], &[]);
    assert_eq!(g.check_addr(sa("169.254.169.254")), Ok(()));
    assert_eq!(g.check_addr(sa("::ffff:169.254.169.254")), Ok(()));
    // The rest of link-local stays closed.
    assert_eq!(
        g.check_addr(sa("169.254.169.253")).map_err(|r| r.code()),
        Err("special_range")
    );
}

#[test]
fn dangerous_allow_ignores_non_metadata_addresses() {
    let g = guard(&[], &["10.0.0.1", "127.0.0.1"], &[]);
    assert!(g.check_addr(sa("10.0.0.1")).is_err());
    assert!(g.check_addr(sa("127.0.0.1")).is_err());
    assert!(is_metadata_address(ip("::ffff:169.254.170.2")));
    assert!(is_metadata_address(ip("fd00:ec2::23")));
    assert!(!is_metadata_address(ip("10.0.0.1")));
}

#[test]
fn allow_cidrs_are_exceptions() {
    let g = guard(&["127.0.0.0/8"], &[], &[]);
    assert_eq!(g.check_addr(sa("127.0.0.2")), Ok(()));
    assert_eq!(g.check_addr(sa("::ffff:127.0.0.2")), Ok(()));
    assert!(g.check_addr(sa("::1")).is_err());
    assert!(g.check_addr(sa("10.0.0.1")).is_err());

    // A mapped-form CIDR means the IPv4 CIDR.
    let g = guard(&["::ffff:127.0.0.0/104"], &[], &[]);
    assert_eq!(g.check_addr(sa("127.0.0.2")), Ok(()));
    assert_eq!(g.check_addr(sa("::ffff:127.0.0.2")), Ok(()));
    assert!(g.check_addr(sa("128.0.0.0")).is_ok());
    assert!(g.check_addr(sa("10.0.0.1")).is_err());

    // An IPv6 catch-all does not open IPv4 (mapped addresses are IPv4).
    let g = guard(&["::/0"], &[], &[]);
    assert_eq!(g.check_addr(sa("fc00::1")), Ok(()));
    assert!(g.check_addr(sa("::ffff:10.0.0.1")).is_err());
}

#[test]
fn canonical_net_rewrites_only_mapped_cidrs() {
    let cases = [
        ("::ffff:10.0.0.0/104", "10.0.0.0/8"),
        ("::ffff:0:0/96", "0.0.0.0/0"),
        ("::/0", "::/0"),
        ("::ffff:0:0/95", "::ffff:0:0/95"),
        ("fc00::/7", "fc00::/7"),
    ];
    for (given, want) in cases {
        let got = canonical_net(given.parse().expect(given));
        assert_eq!(got, want.parse::<IpNet>().expect(want), "{given}");
    }
}

/// Every IPv6 form that carries `v4`, with the `via` label expected.
fn embeddings(v4: Ipv4Addr) -> Vec<(Ipv6Addr, &'static str)> {
    let [o1, o2, o3, o4] = v4.octets();
    let (a, b) = (u16::from_be_bytes([o1, o2]), u16::from_be_bytes([o3, o4]));
    vec![
        (v4.to_ipv6_mapped(), "IPv4-mapped"),
        (Ipv6Addr::new(0, 0, 0, 0, 0, 0, a, b), "IPv4-compatible"),
        (Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, a, b), "NAT64"),
        (Ipv6Addr::new(0x2002, a, b, 0, 0, 0, 0, 1), "6to4"),
        // Client part !0xf7f7f7f7 = 8.8.8.8 is harmless, so the server refuses.
        (Ipv6Addr::new(0x2001, 0, a, b, 0, 0, 0xf7f7, 0xf7f7), "Teredo server"),
        // Server part 8.8.8.8 is harmless, so the inverted client refuses.
        (Ipv6Addr::new(0x2001, 0, 0x0808, 0x0808, 0, 0, !a, !b), "Teredo client"),
    ]
}

#[test]
fn every_embedding_refused_even_when_outer_allowed() {
    let guards = [
        ("no allow", guard(&[], &[], &[])),
        ("allow ::/0", guard(&["::/0"], &[], &[])),
        (
            "allow each outer prefix",
            guard(&["::/96", "64:ff9b::/96", "2002::/16", "2001::/32"], &[], &[]),
        ),
    ];
    let targets = [
        (Ipv4Addr::new(169, 254, 169, 254), "metadata_address"),
        (Ipv4Addr::new(10, 0, 0, 1), "special_range"),
    ];
    for (label, g) in &guards {
        for (v4, code) in targets {
            for (outer, via) in embeddings(v4) {
                let got = g.check_addr(SocketAddr::new(IpAddr::V6(outer), 443));
                let ok = matches!(
                    &got,
                    Err(GuardRefusal::Embedded { outer: o, embedded: e, via: v, inner })
                        if *o == outer && *e == v4 && *v == via && inner.code() == code
                );
                assert!(ok, "{label}: {outer} ({via}) gave {got:?}");
                assert_eq!(got.map_err(|r| r.code()), Err(code));
            }
        }
    }
    // The spec's own example.
    let g = guard(&["2002::/16"], &[], &[]);
    assert!(g.check_addr(sa("2002:a9fe:a9fe::1")).is_err());
}

#[test]
fn embedding_passes_only_when_both_layers_pass() {
    let g = guard(&["2002::/16", "10.0.0.0/8"], &[], &[]);
    assert_eq!(g.check_addr(sa("2002:a00:1::1")), Ok(()));
    // Embedded public address, outer allowed.
    assert_eq!(g.check_addr(sa("2002:808:808::1")), Ok(()));
    // Embedded allowed, outer not.
    let g = guard(&["10.0.0.0/8"], &[], &[]);
    assert_eq!(
        g.check_addr(sa("2002:a00:1::1")),
        Err(GuardRefusal::SpecialRange {
            addr: ip("2002:a00:1::1"),
            range: "2002::/16",
            what: "6to4",
        })
    );
}

#[test]
fn embedded_ipv4_extraction() {
    let v4 = Ipv4Addr::new(192, 0, 2, 33);
    for (outer, via) in embeddings(v4).into_iter().skip(1) {
        assert!(
            embedded_ipv4(outer).contains(&(via, v4)),
            "{outer} should carry {v4} via {via}"
        );
    }
    // :: and ::1 are not IPv4-compatible addresses; plain IPv6 carries nothing.
    for plain in ["::", "::1", "2606:4700::1111", "fe80::1"] {
        let IpAddr::V6(v6) = ip(plain) else {
            continue;
        };
        assert!(embedded_ipv4(v6).is_empty(), "{plain}");
    }
}

#[test]
fn longest_match_names_specific_range() {
    assert_eq!(special_range(ip("::1")).map(|s| s.what), Some("loopback"));
    assert_eq!(special_range(ip("::")).map(|s| s.what), Some("unspecified"));
    assert_eq!(special_range(ip("8.8.8.8")).map(|s| s.what), None);
}

#[test]
fn metadata_names_refused() {
    let g = guard(&["0.0.0.0/0", "::/0"], &[], &[]);
    let mut names: Vec<&str> = METADATA_NAMES.to_vec();
    names.extend([
        "foo.localhost",
        "a.b.localhost",
        ".localhost",
        // Un-normalised input must not slip through.
        "METADATA.Google.Internal.",
        "localhost.",
        "Foo.LocalHost",
    ]);
    for host in names {
        assert_eq!(
            g.check_name(host),
            Err(GuardRefusal::MetadataName { host: host.to_owned() }),
            "{host}"
        );
    }
}

#[test]
fn ordinary_names_allowed() {
    let g = guard(&[], &[], &[]);
    for host in [
        "example.com",
        "localhost.example.com",
        "mymetadata",
        "notlocalhost",
        "metadata.google.internal.example.com",
        "my-service.default.svc.cluster.local",
        "api.github.com",
        // Multi-byte text where the suffix slice would split a character.
        "x\u{e9}123456789",
        "",
    ] {
        assert_eq!(g.check_name(host), Ok(()), "{host:?}");
    }
}

#[test]
fn self_exact_match_refused_inside_allowed_cidr() {
    let g = guard(&["127.0.0.0/8", "::1/128"], &[], &["127.0.0.1:3128", "[::1]:9090"]);
    let own: SocketAddr = "127.0.0.1:3128".parse().expect("addr");
    assert_eq!(g.check_addr(own), Err(GuardRefusal::SelfAddress { addr: own }));
    // Mapped form of the same socket.
    let mapped: SocketAddr = "[::ffff:127.0.0.1]:3128".parse().expect("addr");
    assert_eq!(g.check_addr(mapped).map_err(|r| r.code()), Err("self_address"));
    // Scope id and flow label do not hide the match.
    let scoped = SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::LOCALHOST, 9090, 7, 1));
    assert_eq!(g.check_addr(scoped).map_err(|r| r.code()), Err("self_address"));
    // Same IP, other port: some other local service the operator allowed.
    assert_eq!(g.check_addr("127.0.0.1:8080".parse().expect("addr")), Ok(()));
    // 127.0.0.2 is not bound by a 127.0.0.1 listener.
    assert_eq!(g.check_addr("127.0.0.2:3128".parse().expect("addr")), Ok(()));
}

#[test]
fn self_wildcard_listener_refuses_local_addresses() {
    let g = guard(&["127.0.0.0/8", "0.0.0.0/8", "::1/128"], &[], &["0.0.0.0:3128"]);
    for dial in ["127.0.0.1:3128", "127.0.0.2:3128", "[::1]:3128"] {
        let addr: SocketAddr = dial.parse().expect(dial);
        assert_eq!(g.check_addr(addr), Err(GuardRefusal::SelfAddress { addr }), "{dial}");
    }
    assert_eq!(g.check_addr("127.0.0.1:3129".parse().expect("addr")), Ok(()));
    // Same port on a remote host is not a loop (binding to it fails).
    assert_eq!(g.check_addr("8.8.8.8:3128".parse().expect("addr")), Ok(()));

    // A [::] listener with an IPv4 dial: only the local-address probe
    // connects the two (0.0.0.0 binds, so it is an address of this machine).
    let g = guard(&["127.0.0.0/8"], &[], &["[::]:3128"]);
    let lo: SocketAddr = "127.0.0.3:3128".parse().expect("addr");
    assert_eq!(g.check_addr(lo), Err(GuardRefusal::SelfAddress { addr: lo }));
    assert!(is_local_address("0.0.0.0:1".parse().expect("addr")));
    assert!(!is_local_address("8.8.8.8:1".parse().expect("addr")));
}

#[test]
fn self_unspecified_destination_refused() {
    // connect() to 0.0.0.0 / :: lands on loopback, so it reaches a listener
    // bound to 127.0.0.1 or ::1 on that port.
    let g = guard(&["0.0.0.0/8", "::/128"], &[], &["127.0.0.1:3128", "[::1]:9090"]);
    for dial in ["0.0.0.0:3128", "[::]:3128", "[::ffff:0.0.0.0]:3128", "[::]:9090"] {
        let addr: SocketAddr = dial.parse().expect(dial);
        assert_eq!(g.check_addr(addr), Err(GuardRefusal::SelfAddress { addr }), "{dial}");
    }
    assert_eq!(g.check_addr("0.0.0.0:80".parse().expect("addr")), Ok(()));
}

#[test]
fn range_refusal_reported_before_self() {
    let g = guard(&[], &[], &["0.0.0.0:3128"]);
    assert_eq!(
        g.check_addr("127.0.0.1:3128".parse().expect("addr"))
            .map_err(|r| r.code()),
        Err("special_range")
    );
}

#[test]
fn display_texts() {
    let g = guard(&[], &[], &["127.0.0.1:3128"]);
    let cases = [
        (
            g.check_addr(sa("169.254.169.254")),
            "169.254.169.254 is a cloud metadata address",
        ),
        (
            g.check_addr(sa("10.0.0.1")),
            "10.0.0.1 is in 10.0.0.0/8 (private network)",
        ),
        (
            g.check_addr(sa("::ffff:a9fe:a9fe")),
            "::ffff:169.254.169.254 embeds IPv4 169.254.169.254 (IPv4-mapped): \
             169.254.169.254 is a cloud metadata address",
        ),
        (
            g.check_name("metadata"),
            "metadata is a cloud metadata or local host name",
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got.map_err(|r| r.to_string()), Err(want.to_owned()));
    }
    let own = GuardRefusal::SelfAddress {
        addr: "127.0.0.1:3128".parse().expect("addr"),
    };
    assert_eq!(own.to_string(), "127.0.0.1:3128 is cordon's own listening address");
}

#[test]
fn codes_are_stable() {
    let v4 = Ipv4Addr::new(10, 0, 0, 1);
    let range = GuardRefusal::SpecialRange {
        addr: IpAddr::V4(v4),
        range: "10.0.0.0/8",
        what: "private network",
    };
    let cases = [
        (
            GuardRefusal::MetadataName {
                host: "metadata".into(),
            },
            "metadata_name",
        ),
        (
            GuardRefusal::MetadataAddress {
                addr: METADATA_ADDRESSES[0],
            },
            "metadata_address",
        ),
        (range.clone(), "special_range"),
        (
            GuardRefusal::Embedded {
                outer: v4.to_ipv6_mapped(),
                embedded: v4,
                via: "IPv4-mapped",
                inner: Box::new(range),
            },
            "special_range",
        ),
        (
            GuardRefusal::SelfAddress {
                addr: "127.0.0.1:1".parse().expect("addr"),
            },
            "self_address",
        ),
    ];
    for (refusal, code) in cases {
        assert_eq!(refusal.code(), code, "{refusal}");
    }
}

/// Found by the `ip_guard` fuzz target (`fuzz/`): the IANA registry's Dummy IPv6 Prefix (RFC 9780,
/// 100:0:0:1::/64, not globally reachable) was let through, as it lies outside the discard-only 100::/64.
#[test]
fn dummy_ipv6_prefix_is_refused() {
    let addr = "100::1:a900:0:0:a900";
    assert_eq!(
        guard(&[], &[], &[]).check_addr(sa(addr)),
        Err(GuardRefusal::SpecialRange {
            addr: ip(addr),
            range: "100:0:0:1::/64",
            what: "dummy IPv6 prefix",
        })
    );
}
