#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

fn names(dns: &[&str], ips: &[&str]) -> Scope {
    Scope::Names {
        dns: dns.iter().map(|s| s.to_string()).collect(),
        ips: ips.iter().map(|s| s.parse().unwrap()).collect(),
    }
}

#[test]
fn a_ca_covers_what_its_subtrees_and_ranges_contain_and_nothing_else() {
    let ca = names(&["example.com"], &["10.0.0.0/8"]);
    assert!(
        ca.uncovered(&names(&["example.com", "API.example.com."], &["10.1.0.0/16"]))
            .is_empty()
    );
    // Narrower is covered; another name, a look-alike suffix, a wider or other range are not.
    assert_eq!(
        ca.uncovered(&names(
            &["badexample.com", "example.org"],
            &["10.0.0.0/7", "192.168.0.0/16"]
        )),
        ["badexample.com", "example.org", "10.0.0.0/7", "192.168.0.0/16"]
    );
    // A policy that needs an unconstrained CA is covered only by one.
    assert_eq!(ca.uncovered(&Scope::Unconstrained).len(), 1);
    assert!(Scope::Unconstrained.uncovered(&Scope::Unconstrained).is_empty());
    assert!(Scope::Unconstrained.uncovered(&ca).is_empty());
}
