#![expect(clippy::unwrap_used, reason = "tests")]

use super::{is_metadata_net, special_overlaps};

fn net(s: &str) -> ipnet::IpNet {
    s.parse().unwrap()
}

#[test]
fn everything_lists_every_ipv4_range_wholly() {
    let all = special_overlaps(net("0.0.0.0/0"));
    let ranges: Vec<&str> = all.iter().map(|o| o.range).collect();
    for r in [
        "10.0.0.0/8",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.168.0.0/16",
    ] {
        assert!(ranges.contains(&r), "{r} missing from {ranges:?}");
    }
    assert!(all.iter().all(|o| o.whole && !o.within));
    assert!(!ranges.iter().any(|r| r.contains(':')), "{ranges:?}");
}

#[test]
fn a_narrow_range_lies_within_one() {
    let got = special_overlaps(net("127.0.0.1/32"));
    assert_eq!(got.len(), 1);
    assert_eq!(
        (got[0].range, got[0].whole, got[0].within),
        ("127.0.0.0/8", false, true)
    );
    // Its IPv4-mapped spelling is the same range.
    assert_eq!(special_overlaps(net("::ffff:127.0.0.1/128")), got);
    assert!(special_overlaps(net("8.8.8.0/24")).is_empty());
}

#[test]
fn nested_ranges_held_wholly_are_named_once() {
    let got = special_overlaps(net("2000::/3"));
    let ranges: Vec<&str> = got.iter().map(|o| o.range).collect();
    assert!(ranges.contains(&"2001::/23"), "{ranges:?}");
    assert!(!ranges.contains(&"2001::/32"), "{ranges:?}");
}

#[test]
fn metadata_addresses_are_known_in_both_spellings() {
    assert!(is_metadata_net(net("169.254.169.254/32")));
    assert!(is_metadata_net(net("::ffff:169.254.169.254/128")));
    assert!(!is_metadata_net(net("169.254.169.0/24")));
}
