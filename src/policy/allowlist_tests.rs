#![expect(clippy::unwrap_used, clippy::panic, reason = "tests")]
use super::*;

fn matches(pattern: &str, host: &str) -> bool {
    let p = HostPattern::parse(pattern).map_err(|e| e.to_string());
    let rule = Rule {
        host: Some(p.unwrap_or_else(|e| unreachable!("{e}"))),
        cidrs: vec![],
        ports: vec![443],
        methods: None,
        paths: None,
        path_texts: vec![],
        tls: TlsMode::Intercept,
        action: Action::Allow,
        mcp: None,
        graphql: None,
        model_api: None,
    };
    let (set, _) = compile_hosts(&[rule]).unwrap_or_else(|e| unreachable!("{e}"));
    set.is_match(labels_as_path(host))
}

#[test]
fn wildcard_matches_subdomains_only() {
    assert!(matches("*.github.com", "api.github.com"));
    assert!(matches("*.github.com", "a.b.github.com"));
    // SECURITY: suffix confusion — the bare suffix, a look-alike and the suffix as a prefix never match.
    assert!(!matches("*.github.com", "github.com"));
    assert!(!matches("*.github.com", "evilgithub.com"));
    assert!(!matches("*.github.com", "github.com.evil.com"));
    assert!(!matches("*.github.com", "api.github.com.evil.com"));
    assert!(!matches("*.github.com", "githubxcom"));
}

#[test]
fn exact_matches_only_itself() {
    assert!(matches("github.com", "github.com"));
    assert!(matches("GitHub.COM.", "github.com"));
    assert!(!matches("github.com", "api.github.com"));
    assert!(!matches("github.com", "evilgithub.com"));
    assert!(!matches("github.com", "github.com.evil.com"));
}

#[test]
fn bad_patterns_are_refused_with_a_fix() {
    for (bad, hint) in [
        ("*", "default-deny"),
        ("*github.com", "*.github.com"),
        ("login.*.x.com", "whole first label"),
        ("*.*.x.com", "whole first label"),
        ("bücher.de", "punycode"),
        ("a..b", "empty label"),
        ("exa mple.com", "contains"),
        ("10.0.0.1", "cidrs"),
        ("[::1]", "cidrs"),
        ("", "empty"),
        ("git?hub.com", "contains"),
        ("git[h]ub.com", "contains"),
    ] {
        let err = HostPattern::parse(bad).err().unwrap_or_default();
        assert!(err.contains(hint), "{bad:?}: {err}");
    }
}

#[test]
fn ports_and_methods() {
    assert_eq!(parse_port(443), Ok(443));
    assert!(parse_port(0).is_err());
    assert!(parse_port(65536).is_err());
    assert!(parse_port(-1).is_err());
    let ok = |m: &str| parse_method_checked(m).map_err(|e| panic!("{m}: {e}")).unwrap();
    let refused = |m: &str| parse_method_checked(m).unwrap_err();
    assert_eq!(ok("GET"), (Method::GET, None));
    assert_eq!(ok("PROPFIND").1, None);
    assert!(refused("CONNECT").contains("tunnels"));
    assert!(refused("connect").contains("tunnels"));
    assert!(refused("GE T").contains("not an HTTP method"));
    assert!(refused("").contains("not an HTTP method"));
    // Methods are case-sensitive: a known one in the wrong case is a typo.
    assert!(refused("get").contains("case-sensitive") && refused("get").contains("write GET"));
    assert!(refused("Post").contains("write POST"));
    // One letter away from a known method: inserted, deleted, replaced, swapped.
    for (typo, meant) in [
        ("GETT", "GET"),
        ("DELTE", "DELETE"),
        ("PITCH", "PATCH"),
        ("PSOT", "POST"),
        ("gett", "GET"),
    ] {
        assert!(
            refused(typo).contains(&format!("did you mean {meant}")),
            "{typo}: {}",
            refused(typo)
        );
    }
    // Another token is an extension method: accepted as written, with a warning.
    let (m, warning) = ok("FROBNICATE");
    assert_eq!(m.as_str(), "FROBNICATE");
    assert!(warning.unwrap().contains("not a method cordon knows"));
    assert_eq!(ok("X-Custom_1").0.as_str(), "X-Custom_1");
}

#[test]
fn path_globs_do_not_cross_segments_with_one_star() {
    let set = compile_paths(&["/repos/*/issues".into(), "/v1/**".into()]).unwrap_or_else(|e| unreachable!("{e:?}"));
    assert!(set.is_match("/repos/acme/issues"));
    assert!(!set.is_match("/repos/acme/x/issues"));
    assert!(set.is_match("/v1/a/b/c"));
    assert!(!set.is_match("/v2/a"));
    assert!(compile_paths(&["v1/**".into()]).is_err());
    assert!(compile_paths(&["/v1/[".into()]).is_err());
}
