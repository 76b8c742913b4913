#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;
use crate::policy::allowlist::{DEFAULT_PORTS, compile_paths};
use crate::policy::{HostPattern, Mode, Policy, Rule, TlsMode};
use crate::target::Target;

fn host_rule(host: &str) -> Rule {
    Rule {
        host: Some(HostPattern::parse(host).unwrap()),
        cidrs: vec![],
        ports: DEFAULT_PORTS.to_vec(),
        methods: None,
        paths: None,
        path_texts: vec![],
        tls: TlsMode::Intercept,
        action: Default::default(),
    }
}

fn policy(mode: Mode, rules: Vec<Rule>) -> Policy {
    Policy::new("p".into(), mode, rules).unwrap()
}

fn t(s: &str) -> Target {
    Target::from_authority_form(s).unwrap()
}

fn tunnel(p: &Policy, target: &str) -> Decision {
    p.decide(Question {
        target: &t(target),
        request: None,
    })
}

fn http(p: &Policy, target: &str, method: Method, path: &str) -> Decision {
    p.decide(Question {
        target: &t(target),
        request: Some((&method, path)),
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
fn first_allowing_rule_is_named() {
    let mut narrow = host_rule("api.github.com");
    narrow.methods = Some(vec![Method::GET]);
    let p = policy(Mode::Enforce, vec![narrow, host_rule("*.github.com")]);
    let d = http(&p, "api.github.com:443", Method::GET, "/");
    assert_eq!(d.rule, Some(0));
    let d = http(&p, "api.github.com:443", Method::POST, "/");
    assert_eq!(d.rule, Some(1));
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
