//! Property tests of the decision against a reference matcher written the obvious way: a rule names an exact
//! host, or every name one or more labels under a suffix (`*` is a whole label and never crosses a dot), a list
//! of ports, optionally of methods, and a TLS mode; of the rules naming the host, only those of the most specific
//! pattern answer (an exact name, else the longest suffix), tunnel rules never inside an interception, and the
//! first of them that allows wins.
#![expect(clippy::unwrap_used, reason = "tests")]

use http::Method;
use proptest::prelude::*;

use super::*;
use crate::policy::allowlist::{Action, HostPattern, TlsMode};
use crate::target::{Host, Target};

/// Names from a tiny alphabet, so that rules and hosts meet often.
fn label() -> impl Strategy<Value = String> {
    "[ab]{1,2}"
}

fn name() -> impl Strategy<Value = String> {
    prop::collection::vec(label(), 1..4).prop_map(|labels| labels.join("."))
}

fn pattern() -> impl Strategy<Value = HostPattern> {
    (any::<bool>(), name()).prop_map(|(wild, n)| {
        if wild {
            HostPattern::Subdomains(n)
        } else {
            HostPattern::Exact(n)
        }
    })
}

fn method() -> impl Strategy<Value = Method> {
    prop::sample::select(vec![Method::GET, Method::POST, Method::PUT])
}

/// (pattern, ports, methods, TLS mode) of one rule.
type Spec = (HostPattern, Vec<u16>, Option<Vec<Method>>, TlsMode);

fn spec() -> impl Strategy<Value = Spec> {
    (
        pattern(),
        prop::collection::vec(prop::sample::select(vec![80u16, 443, 8080]), 1..3),
        prop::option::of(prop::collection::vec(method(), 1..3)),
        any::<bool>(),
    )
        // A tunnel rule limits no method (validation refuses it).
        .prop_map(|(h, ports, methods, tunnel)| {
            if tunnel {
                (h, ports, None, TlsMode::Tunnel)
            } else {
                (h, ports, methods, TlsMode::Intercept)
            }
        })
}

fn policy(specs: &[Spec]) -> Policy {
    let rules = specs
        .iter()
        .map(|(host, ports, methods, tls)| Rule {
            host: Some(host.clone()),
            cidrs: vec![],
            ports: ports.clone(),
            methods: methods.clone(),
            paths: None,
            path_texts: vec![],
            tls: *tls,
            action: Action::Allow,
            mcp: None,
            graphql: None,
            model_api: None,
        })
        .collect();
    Policy::new("p".into(), Mode::Enforce, rules).unwrap()
}

/// The reference: does `pattern` name `host`?
fn names(pattern: &HostPattern, host: &str) -> bool {
    match pattern {
        HostPattern::Exact(n) => host == n,
        HostPattern::Subdomains(suffix) => {
            host.len() > suffix.len() + 1 && host.ends_with(suffix.as_str()) && {
                let cut = host.len() - suffix.len() - 1;
                host.as_bytes()[cut] == b'.'
            }
        }
    }
}

/// How many labels a pattern pins, exact names above wildcards with as many: the reference's specificity.
fn weight(pattern: &HostPattern) -> usize {
    match pattern {
        HostPattern::Exact(n) => 2 * n.split('.').count() + 1,
        HostPattern::Subdomains(s) => 2 * s.split('.').count(),
    }
}

/// The reference decision: of the rules naming the host, those whose pattern pins the most; of those (tunnel
/// rules left out inside an interception), the first naming the port and the method.
fn reference(specs: &[Spec], host: &str, port: u16, m: Option<&Method>, intercepted: bool) -> Option<usize> {
    let top = specs.iter().filter(|s| names(&s.0, host)).map(|s| weight(&s.0)).max()?;
    specs
        .iter()
        .enumerate()
        .position(|(_, (pattern, ports, methods, tls))| {
            names(pattern, host)
                && weight(pattern) == top
                && !(intercepted && *tls == TlsMode::Tunnel)
                && ports.contains(&port)
                && m.is_none_or(|m| methods.as_ref().is_none_or(|ms| ms.contains(m)))
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn the_decision_is_the_first_rule_the_reference_finds(
        specs in prop::collection::vec(spec(), 1..6),
        host in name(),
        port in prop::sample::select(vec![80u16, 443, 8080, 22]),
        m in method(),
        layer in 0u8..3,
    ) {
        let p = policy(&specs);
        let target = Target { host: Host::Name(host.clone()), port };
        // 0: a CONNECT; 1: a plain HTTP request; 2: a request inside an interception.
        let request = (layer > 0).then_some((&m, "/"));
        let d = p.decide(Question { target: &target, request, intercepted: layer == 2 });
        let want = reference(&specs, &host, port, request.map(|r| r.0), layer == 2);
        prop_assert_eq!(d.rule, want, "{} {:?}", &host, &specs);
        prop_assert_eq!(d.allowed, want.is_some());
        // SECURITY: inside an interception, never a rule of the other TLS mode.
        if layer == 2 && let Some(rule) = d.rule {
            prop_assert_eq!(p.rules[rule].tls, TlsMode::Intercept);
        }
    }

    #[test]
    fn a_wildcard_never_crosses_a_dot_nor_matches_its_own_suffix(
        suffix in name(),
        glued in "[ab]{1,3}",
        extra in name(),
    ) {
        let p = policy(&[(HostPattern::Subdomains(suffix.clone()), vec![443], None, TlsMode::Intercept)]);
        let allowed = |host: String| {
            let target = Target { host: Host::Name(host), port: 443 };
            p.decide(Question::connect(&target)).allowed
        };
        // Glued to the suffix without a dot, and the suffix itself: never.
        let glued_on = format!("{glued}{suffix}");
        prop_assert!(!allowed(glued_on));
        prop_assert!(!allowed(suffix.clone()));
        // The suffix followed by more labels: only where that happens to end with `.suffix` again.
        let after = format!("{suffix}.{extra}");
        let wanted = names(&HostPattern::Subdomains(suffix.clone()), &after);
        prop_assert_eq!(allowed(after), wanted);
        // One or more whole labels under it: always.
        let one = format!("{glued}.{suffix}");
        let two = format!("{extra}.{glued}.{suffix}");
        prop_assert!(allowed(one));
        prop_assert!(allowed(two));
    }
}

proptest! {
    /// The host index finds exactly the rules of the most specific pattern among those the glob matcher it
    /// replaced found, in order.
    #[test]
    fn the_host_index_governs_as_the_globs_and_specificity_say(
        specs in prop::collection::vec(spec(), 0..12),
        host in name(),
    ) {
        let p = policy(&specs);
        let (set, owners) = crate::policy::allowlist::compile_hosts(&p.rules).unwrap();
        let mut by_globs: Vec<usize> = set
            .matches(crate::policy::allowlist::labels_as_path(&host))
            .into_iter()
            .map(|g| owners[g])
            .collect();
        by_globs.sort_unstable();
        by_globs.dedup();
        let top = by_globs.iter().map(|&i| weight(&specs[i].0)).max();
        by_globs.retain(|&i| Some(weight(&specs[i].0)) == top);
        prop_assert_eq!(p.governing(&Host::Name(host.clone())), by_globs);
    }
}
