//! Property tests of the ceiling against the decision itself: whatever random base and own policies are drawn,
//! when the ceiling accepts the own policy, no request (at CONNECT, plain or inside an interception) is allowed
//! by it that the base refuses, a CONNECT it allows opens in the base's TLS mode, and a request the base would
//! hold for approval is held by the own policy too.
#![expect(clippy::unwrap_used, reason = "tests")]

use http::Method;
use proptest::prelude::*;

use super::*;
use crate::policy::Question;
use crate::policy::allowlist::compile_paths;
use crate::target::{Host, Target};

fn name() -> impl Strategy<Value = String> {
    prop::collection::vec("[ab]", 1..4).prop_map(|labels| labels.join("."))
}

fn destination() -> impl Strategy<Value = (Option<HostPattern>, Vec<ipnet::IpNet>)> {
    prop_oneof![
        4 => (any::<bool>(), name()).prop_map(|(wild, n)| {
            (Some(if wild { HostPattern::Subdomains(n) } else { HostPattern::Exact(n) }), vec![])
        }),
        1 => prop::sample::select(vec!["10.0.0.0/8", "10.1.0.0/16", "10.1.1.0/24", "10.1.1.1/32"])
            .prop_map(|c| (None, vec![c.parse().unwrap()])),
    ]
}

const PATHS: [&[&str]; 4] = [&["/a/**"], &["/a/b"], &["/b/*"], &["/a/**", "/b/*"]];

fn rule() -> impl Strategy<Value = Rule> {
    (
        destination(),
        prop::collection::vec(prop::sample::select(vec![80u16, 443]), 1..3),
        prop::option::of(prop::collection::vec(
            prop::sample::select(vec![Method::GET, Method::POST]),
            1..3,
        )),
        prop::option::of(0..PATHS.len()),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|((host, cidrs), mut ports, methods, paths, tunnel, ask)| {
            ports.sort_unstable();
            ports.dedup();
            // What validation lets through: a tunnel rule limits no method or path and never asks.
            let (methods, paths, action) = if tunnel {
                (None, None, Action::Allow)
            } else {
                (methods, paths, if ask { Action::Ask } else { Action::Allow })
            };
            let path_texts: Vec<String> = paths
                .map(|i| PATHS[i].iter().map(|p| p.to_string()).collect())
                .unwrap_or_default();
            Rule {
                host,
                cidrs,
                ports,
                methods,
                paths: paths.map(|_| compile_paths(&path_texts).unwrap()),
                path_texts,
                tls: if tunnel { TlsMode::Tunnel } else { TlsMode::Intercept },
                action,
                mcp: None,
                graphql: None,
                model_api: None,
            }
        })
}

/// An own rule made from a base rule by what a user might write: a name under its pattern, fewer ports, methods
/// or a path, the other TLS mode or action; often inside the base, sometimes not (the ceiling must tell which).
fn derived(base: Vec<Rule>) -> impl Strategy<Value = Rule> {
    (
        0..base.len(),
        prop::option::of("[ab]"),
        any::<bool>(),
        prop::option::of(prop::sample::select(vec![80u16, 443])),
        prop::option::of(prop::sample::select(vec![Method::GET, Method::POST])),
        prop::option::of(0..PATHS.len()),
        0u8..8,
    )
        .prop_map(move |(i, label, exact, port, method, paths, flip)| {
            let mut r = base[i].clone();
            if let (Some(label), Some(h)) = (label, &r.host) {
                let under = match h {
                    HostPattern::Exact(n) | HostPattern::Subdomains(n) => format!("{label}.{n}"),
                };
                r.host = Some(if exact {
                    HostPattern::Exact(under)
                } else {
                    HostPattern::Subdomains(under)
                });
            }
            if let Some(p) = port {
                r.ports = vec![p];
            }
            if r.tls == TlsMode::Intercept {
                if let Some(m) = method {
                    r.methods = Some(vec![m]);
                }
                if let Some(i) = paths {
                    r.path_texts = PATHS[i].iter().map(|p| p.to_string()).collect();
                    r.paths = Some(compile_paths(&r.path_texts).unwrap());
                }
            }
            match flip {
                0 => {
                    r.tls = TlsMode::Tunnel;
                    r.methods = None;
                    r.paths = None;
                    r.path_texts = vec![];
                    r.action = Action::Allow;
                }
                1 => {
                    r.tls = TlsMode::Intercept;
                }
                2 if r.tls == TlsMode::Intercept => r.action = Action::Allow,
                _ => {}
            }
            r
        })
}

fn policy(name: &str, rules: Vec<Rule>) -> Policy {
    Policy::new(name.into(), Mode::Enforce, rules).unwrap()
}

fn host() -> impl Strategy<Value = Host> {
    prop_oneof![
        4 => prop::collection::vec("[ab]", 1..5).prop_map(|labels| Host::Name(labels.join("."))),
        1 => prop::sample::select(vec!["10.1.1.1", "10.1.1.2", "10.1.2.1", "10.2.0.1"])
            .prop_map(|a| Host::V4(a.parse().unwrap())),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn an_accepted_own_policy_never_goes_past_its_base(
        (base, own) in prop::collection::vec(rule(), 1..6).prop_flat_map(|base| {
            let own = prop::collection::vec(prop_oneof![3 => derived(base.clone()), 1 => rule()], 1..4);
            (Just(base), own)
        }),
        requests in prop::collection::vec(
            (host(), prop::sample::select(vec![80u16, 443]), prop::sample::select(vec![Method::GET, Method::POST]),
             prop::sample::select(vec!["/a/b", "/a/c", "/b/x", "/c"]), 0u8..3),
            1..12,
        ),
    ) {
        let base = policy("base", base);
        let own = policy("own", own);
        if !exceeds(&own, &base, "policy").is_empty() {
            return Ok(());
        }
        for (host, port, method, path, layer) in &requests {
            let target = Target { host: host.clone(), port: *port };
            let q = Question {
                target: &target,
                request: (*layer > 0).then_some((method, *path)),
                intercepted: *layer == 2,
            };
            let (mine, theirs) = (own.decide(q), base.decide(q));
            if !mine.allowed {
                continue;
            }
            prop_assert!(theirs.allowed, "own allows what the base refuses: {target} {method} {path} layer {layer}\nown {:?}\nbase {:?}", own.rules, base.rules);
            let (m, t) = (&own.rules[mine.rule.unwrap()], &base.rules[theirs.rule.unwrap()]);
            if *layer == 0 {
                prop_assert_eq!(m.tls, t.tls, "another TLS mode than the base's for {}", target);
            } else if t.action == Action::Ask {
                prop_assert_eq!(m.action, Action::Ask, "skips the base's approval for {} {}", target, path);
            }
        }
    }
}
