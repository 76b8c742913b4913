#![expect(clippy::expect_used, reason = "tests")]
use super::*;

fn host(s: &str) -> HostPattern {
    HostPattern::parse(s).expect("a host pattern")
}

#[test]
fn hosts_within_their_patterns() {
    assert!(host_within(&host("github.com"), &host("github.com")));
    assert!(host_within(&host("api.github.com"), &host("*.github.com")));
    assert!(host_within(&host("a.b.github.com"), &host("*.github.com")));
    assert!(host_within(&host("*.api.github.com"), &host("*.github.com")));
    assert!(host_within(&host("*.github.com"), &host("*.github.com")));
    // The suffix itself is not under `*.suffix`, a wildcard is not under an exact name, look-alikes are not.
    assert!(!host_within(&host("github.com"), &host("*.github.com")));
    assert!(!host_within(&host("*.github.com"), &host("github.com")));
    assert!(!host_within(&host("evilgithub.com"), &host("*.github.com")));
    assert!(!host_within(&host("github.com.evil.org"), &host("github.com")));
    assert!(!host_within(&host("*.com"), &host("*.github.com")));
}

fn set(globs: &[&str]) -> (Vec<String>, globset::GlobSet) {
    let texts: Vec<String> = globs.iter().map(|s| s.to_string()).collect();
    let compiled = crate::policy::allowlist::compile_paths(&texts).expect("globs");
    (texts, compiled)
}

#[test]
fn paths_within_are_judged_conservatively() {
    let (texts, compiled) = set(&["/acme/**", "/simple/*/"]);
    let within = |p: &str| path_within(p, &texts, &compiled);
    assert!(within("/acme/**"));
    assert!(within("/acme/web/**"));
    assert!(within("/acme/web/*.git"));
    assert!(within("/acme/web/info/refs"));
    assert!(within("/simple/requests/"));
    assert!(within("/simple/*/"));
    // Outside, or not provably inside.
    assert!(!within("/**"));
    assert!(!within("/acm*/**"));
    assert!(!within("/acmeX/x"));
    assert!(!within("/simple/**"));
    assert!(!within("/simple/a/b/"));
}
