#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;
use crate::policy::allowlist::compile_paths;
use crate::policy::{Mode, Policy, Rule, TlsMode};
use crate::target::Target;

fn host_rule(host: &str) -> Rule {
    crate::policy::testing::rule(host, TlsMode::Intercept)
}

fn policy(mode: Mode, rules: Vec<Rule>) -> Policy {
    Policy::new("p".into(), mode, rules).unwrap()
}

fn t(s: &str) -> Target {
    Target::from_authority_form(s).unwrap()
}

fn tunnel(p: &Policy, target: &str) -> Decision {
    p.decide(Question::connect(&t(target)))
}

/// A request inside an interception.
fn http(p: &Policy, target: &str, method: Method, path: &str) -> Decision {
    p.decide(Question {
        target: &t(target),
        request: Some((&method, path)),
        intercepted: true,
    })
}

#[test]
fn default_deny_without_rules() {
    let p = policy(Mode::Enforce, vec![]);
    let d = tunnel(&p, "example.com:443");
    assert!(!d.allowed);
    assert_eq!(d.deny, Some(DenyReason::NoRule));
}

#[test]
fn the_most_specific_pattern_governs_and_the_first_of_its_rules_allows() {
    let mut narrow = host_rule("api.github.com");
    narrow.methods = Some(vec![Method::GET]);
    let mut upload = host_rule("api.github.com");
    upload.methods = Some(vec![Method::POST]);
    upload.paths = Some(compile_paths(&["/upload/**".into()]).unwrap());
    let p = policy(Mode::Enforce, vec![narrow, host_rule("*.github.com"), upload]);
    assert_eq!(http(&p, "api.github.com:443", Method::GET, "/").rule, Some(0));
    assert_eq!(http(&p, "api.github.com:443", Method::POST, "/upload/x").rule, Some(2));
    // SECURITY: the wildcard does not answer for a name a more specific rule governs.
    let d = http(&p, "api.github.com:443", Method::POST, "/");
    assert!(!d.allowed);
    assert_eq!(d.deny, Some(DenyReason::Path));
    assert_eq!(http(&p, "www.github.com:443", Method::POST, "/").rule, Some(1));
    // A longer suffix governs the names under it.
    let mut deep = host_rule("*.eu.github.com");
    deep.ports = vec![443];
    let p = policy(Mode::Enforce, vec![host_rule("*.github.com"), deep]);
    assert_eq!(tunnel(&p, "x.eu.github.com:443").rule, Some(1));
    assert_eq!(tunnel(&p, "x.eu.github.com:80").deny, Some(DenyReason::Port));
    assert_eq!(tunnel(&p, "eu.github.com:80").rule, Some(0));
}

#[test]
fn a_tunnel_rule_never_answers_inside_an_interception() {
    let mut read = host_rule("api.example.com");
    read.methods = Some(vec![Method::GET]);
    read.paths = Some(compile_paths(&["/v1/**".into()]).unwrap());
    let mut blind = host_rule("api.example.com");
    blind.tls = TlsMode::Tunnel;
    let mut wide = host_rule("*.example.com");
    wide.tls = TlsMode::Tunnel;
    for rules in [vec![read.clone(), wide.clone()], vec![read.clone(), blind.clone()]] {
        let p = policy(Mode::Enforce, rules);
        assert_eq!(tunnel(&p, "api.example.com:443").rule, Some(0));
        assert!(http(&p, "api.example.com:443", Method::GET, "/v1/x").allowed);
        for (m, path) in [
            (Method::DELETE, "/admin/x"),
            (Method::GET, "/admin"),
            (Method::POST, "/v1/x"),
        ] {
            assert!(!http(&p, "api.example.com:443", m, path).allowed);
        }
    }
    // Plain HTTP is no interception: a tunnel rule there allows as it always did.
    let p = policy(Mode::Enforce, vec![blind]);
    let plain = p.decide(Question {
        target: &t("api.example.com:80"),
        request: Some((&Method::DELETE, "/x")),
        intercepted: false,
    });
    assert_eq!(plain.rule, Some(0));
    assert_eq!(
        http(&p, "api.example.com:443", Method::GET, "/").deny,
        Some(DenyReason::NoRule)
    );
}

#[test]
fn the_longest_range_governs_an_address() {
    let mut wide = host_rule("x.example.com");
    wide.host = None;
    wide.cidrs = vec!["10.0.0.0/8".parse().unwrap()];
    let mut narrow = wide.clone();
    narrow.cidrs = vec!["10.1.0.0/16".parse().unwrap()];
    narrow.ports = vec![443];
    let p = policy(Mode::Enforce, vec![wide, narrow]);
    assert_eq!(tunnel(&p, "10.1.2.3:443").rule, Some(1));
    assert_eq!(tunnel(&p, "10.1.2.3:80").deny, Some(DenyReason::Port));
    assert_eq!(tunnel(&p, "10.2.0.1:80").rule, Some(0));
}

#[test]
fn ports_default_to_80_and_443() {
    let p = policy(Mode::Enforce, vec![host_rule("example.com")]);
    assert!(tunnel(&p, "example.com:443").allowed);
    assert!(tunnel(&p, "example.com:80").allowed);
    let d = tunnel(&p, "example.com:22");
    assert_eq!(d.deny, Some(DenyReason::Port));
}

#[test]
fn methods_and_paths() {
    let mut r = host_rule("api.github.com");
    r.methods = Some(vec![Method::GET, Method::HEAD]);
    r.paths = Some(compile_paths(&["/repos/acme/**".into()]).unwrap());
    let p = policy(Mode::Enforce, vec![r]);
    assert!(http(&p, "api.github.com:443", Method::GET, "/repos/acme/x/issues").allowed);
    assert_eq!(
        http(&p, "api.github.com:443", Method::POST, "/repos/acme/x").deny,
        Some(DenyReason::Method)
    );
    assert_eq!(
        http(&p, "api.github.com:443", Method::GET, "/repos/other/x").deny,
        Some(DenyReason::Path)
    );
    // At CONNECT the rule allows the host; its limits apply to each request inside the interception.
    assert!(tunnel(&p, "api.github.com:443").allowed);
}

#[test]
fn host_globs_never_match_ip_literals() {
    let p = policy(Mode::Enforce, vec![host_rule("*.example.com")]);
    assert_eq!(tunnel(&p, "127.0.0.1:443").deny, Some(DenyReason::NoRule));
    let mut r = host_rule("x.example.com");
    r.host = None;
    r.cidrs = vec!["127.0.0.0/30".parse().unwrap()];
    let p = policy(Mode::Enforce, vec![r]);
    assert!(tunnel(&p, "127.0.0.2:443").allowed);
    assert!(!tunnel(&p, "127.0.0.9:443").allowed);
    assert!(!tunnel(&p, "[::1]:443").allowed);
}

#[test]
fn report_mode_allows_but_says_why_not() {
    let p = policy(Mode::Report, vec![host_rule("example.com")]);
    let d = tunnel(&p, "evil.com:443");
    assert!(d.allowed);
    assert_eq!(d.rule, None);
    assert_eq!(d.deny, Some(DenyReason::NoRule));
}

#[test]
fn ten_thousand_rules_still_match_the_right_one() {
    let rules: Vec<Rule> = (0..10_000).map(|i| host_rule(&format!("h{i}.example.com"))).collect();
    let p = policy(Mode::Enforce, rules);
    assert_eq!(tunnel(&p, "h9999.example.com:443").rule, Some(9999));
    assert!(!tunnel(&p, "h10000.example.com:443").allowed);
}
