#![expect(clippy::unwrap_used, reason = "tests")]
use http::Method;

use crate::policy::testing::rule;
use crate::policy::{Mode, Policy, Rule, TlsMode};

fn warnings(rules: Vec<Rule>) -> Vec<(usize, String)> {
    Policy::new("p".into(), Mode::Enforce, rules).unwrap().overlaps()
}

#[test]
fn a_wildcard_overridden_in_the_other_mode_is_told() {
    let mut read = rule("api.example.com", TlsMode::Intercept);
    read.methods = Some(vec![Method::GET]);
    let w = warnings(vec![read, rule("*.example.com", TlsMode::Tunnel)]);
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].0, 1);
    assert!(w[0].1.contains("for api.example.com, allow[0] governs"), "{}", w[0].1);
    // The same mode: a specific rule narrowing a wildcard is what rules are for, nothing to say.
    assert!(
        warnings(vec![
            rule("api.example.com", TlsMode::Intercept),
            rule("*.example.com", TlsMode::Intercept)
        ])
        .is_empty()
    );
}

#[test]
fn the_same_destination_in_two_modes_is_told_on_the_later_rule() {
    let w = warnings(vec![
        rule("api.example.com", TlsMode::Intercept),
        rule("api.example.com", TlsMode::Tunnel),
    ]);
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].0, 1);
    assert!(w[0].1.contains("never opens a blind tunnel"), "{}", w[0].1);
    // On ports the first does not name, the second is the one that opens: nothing to say.
    let mut only_80 = rule("api.example.com", TlsMode::Intercept);
    only_80.ports = vec![80];
    let mut tls = rule("api.example.com", TlsMode::Tunnel);
    tls.ports = vec![443];
    assert!(warnings(vec![only_80, tls]).is_empty());
}

#[test]
fn a_rule_shadowed_entirely_is_told() {
    let mut narrow = rule("api.example.com", TlsMode::Intercept);
    narrow.methods = Some(vec![Method::GET]);
    let w = warnings(vec![rule("api.example.com", TlsMode::Intercept), narrow.clone()]);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].1.starts_with("never decides anything"), "{}", w[0].1);
    // The narrow rule first, the wide one after: both decide something.
    assert!(warnings(vec![narrow, rule("api.example.com", TlsMode::Intercept)]).is_empty());
}

#[test]
fn ranges_are_judged_as_names_are() {
    let mut wide = rule("x.example.com", TlsMode::Tunnel);
    wide.host = None;
    wide.cidrs = vec!["10.0.0.0/8".parse().unwrap()];
    let mut narrow = wide.clone();
    narrow.cidrs = vec!["10.1.0.0/16".parse().unwrap()];
    narrow.tls = TlsMode::Intercept;
    let w = warnings(vec![wide, narrow]);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].1.contains("for 10.1.0.0/16, allow[1] governs"), "{}", w[0].1);
}
