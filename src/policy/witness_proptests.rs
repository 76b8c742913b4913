//! Property tests of containment against the live decision, over rules with MCP and GraphQL sections,
//! credentials and report mode: when the ceiling finds nothing, every request the candidate lets through (with
//! its tool, operation and credential) the boundary lets through too, in the same TLS mode at CONNECT and with
//! approval wherever the boundary asks; and every counterexample the ceiling names is let through by the
//! candidate and refused (or opened in another TLS mode, or sent without the approval asked) by the boundary.
#![expect(clippy::unwrap_used, reason = "tests")]

use std::sync::Arc;

use http::Method;
use proptest::prelude::*;

use super::*;
use crate::policy::allowlist::compile_paths;
use crate::policy::ceiling::exceeds;
use crate::policy::graphql::GraphqlRules;
use crate::policy::mcp::McpRules;
use crate::policy::{Action, Mode};

const PATHS: [&[&str]; 3] = [&["/a/**"], &["/a/b"], &["/b/*"]];
const TOOLS: [&str; 4] = ["a", "b", "c*", "c1"];
const OPS: [&str; 4] = ["query", "mutation.x", "mutation.y*", "mutation.y1"];

fn pick(all: &'static [&'static str]) -> impl Strategy<Value = Vec<String>> {
    prop::sample::subsequence(all.to_vec(), 0..=2).prop_map(|v| v.into_iter().map(String::from).collect())
}

/// An `mcp:` or `graphql:` section, or none.
fn section() -> impl Strategy<Value = (Option<Arc<McpRules>>, Option<Arc<GraphqlRules>>)> {
    prop_oneof![
        2 => Just((None, None)),
        1 => (pick(&TOOLS), pick(&TOOLS), pick(&TOOLS)).prop_map(|(t, a, d)| {
            (Some(Arc::new(McpRules::new(t, a, d, vec![]).unwrap())), None)
        }),
        1 => (pick(&OPS), pick(&OPS), pick(&OPS)).prop_map(|(o, a, d)| {
            (None, Some(Arc::new(GraphqlRules::new(o, a, d, vec![]).unwrap())))
        }),
    ]
}

fn rule() -> impl Strategy<Value = Rule> {
    (
        (any::<bool>(), prop::collection::vec("[ab]", 1..3)),
        prop::sample::subsequence(vec![80u16, 443], 1..=2),
        prop::option::of(prop::sample::subsequence(vec![Method::GET, Method::POST], 1..=2)),
        prop::option::of(0..PATHS.len()),
        any::<bool>(),
        any::<bool>(),
        section(),
    )
        .prop_map(|((wild, labels), ports, methods, paths, tunnel, ask, (mcp, graphql))| {
            let n = labels.join(".");
            let mut r = crate::policy::testing::rule("x.y", TlsMode::Intercept);
            r.host = Some(if wild {
                HostPattern::Subdomains(n)
            } else {
                HostPattern::Exact(n)
            });
            r.ports = ports;
            if tunnel {
                r.tls = TlsMode::Tunnel;
            } else {
                r.methods = methods;
                r.path_texts = paths
                    .map(|i| PATHS[i].iter().map(|p| p.to_string()).collect())
                    .unwrap_or_default();
                r.paths = paths.map(|_| compile_paths(&r.path_texts).unwrap());
                r.action = if ask { Action::Ask } else { Action::Allow };
                r.mcp = mcp;
                r.graphql = graphql;
            }
            r
        })
}

/// A candidate rule made from a boundary rule: often inside it, sometimes not.
fn derived(base: Vec<Rule>) -> impl Strategy<Value = Rule> {
    (
        0..base.len(),
        prop::option::of("[ab]"),
        0u8..6,
        section(),
        prop::option::of(prop::sample::select(vec![80u16, 443])),
    )
        .prop_map(move |(i, label, change, (mcp, graphql), port)| {
            let mut r = base[i].clone();
            if let (Some(l), Some(HostPattern::Subdomains(s))) = (label, &r.host) {
                r.host = Some(HostPattern::Exact(format!("{l}.{s}")));
            }
            if let Some(p) = port {
                r.ports = vec![p];
            }
            match change {
                0 if r.tls == TlsMode::Intercept => {
                    r.mcp = mcp;
                    r.graphql = graphql;
                }
                1 => {
                    r.tls = TlsMode::Tunnel;
                    r.methods = None;
                    r.paths = None;
                    r.path_texts = vec![];
                    r.action = Action::Allow;
                    r.mcp = None;
                    r.graphql = None;
                }
                2 => r.action = Action::Allow,
                _ => {}
            }
            if r.tls == TlsMode::Tunnel {
                r.action = Action::Allow;
            }
            r
        })
}

fn policy(name: &str, rules: Vec<Rule>, report: bool, creds: Vec<String>) -> Policy {
    let mut p = Policy::new(name.into(), if report { Mode::Report } else { Mode::Enforce }, rules).unwrap();
    p.credentials = creds.into_iter().map(CredentialName::from).collect();
    p
}

fn request() -> impl Strategy<Value = Probe> {
    (
        prop::collection::vec("[ab]", 1..4),
        prop::sample::select(vec![80u16, 443]),
        prop::option::of((
            prop::sample::select(vec![Method::GET, Method::POST]),
            prop::sample::select(vec!["/a/b", "/a/c", "/b/x", "/"]),
        )),
        any::<bool>(),
        prop::option::of(prop::sample::select(vec!["a", "b", "B", "c1", "C1", "c2", "d"])),
        prop::option::of(prop::sample::select(vec![
            (OpType::Query, "q"),
            (OpType::Mutation, "x"),
            (OpType::Mutation, "X"),
            (OpType::Mutation, "y1"),
            (OpType::Mutation, "y2"),
            (OpType::Mutation, "z"),
        ])),
        prop::option::of(prop::sample::select(vec!["k1", "k2"])),
    )
        .prop_map(|(labels, port, request, intercepted, tool, op, cred)| Probe {
            target: Target {
                host: Host::Name(labels.join(".")),
                port,
            },
            intercepted: intercepted && request.is_some(),
            request: request.clone().map(|(m, p)| (m, p.to_string())),
            tool: tool.filter(|_| request.is_some() && op.is_none()).map(String::from),
            operation: op.filter(|_| request.is_some()).map(|(t, f)| (t, f.to_string(), None)),
            credential: cred.map(CredentialName::from),
        })
}

fn creds() -> impl Strategy<Value = Vec<String>> {
    prop::sample::subsequence(vec!["k1", "k2"], 0..=2).prop_map(|v| v.into_iter().map(String::from).collect())
}

const ANYWHERE: CredentialBound<'static> = &|_, _, _, _| true;

/// Whether `w` shows what the ceiling said: the candidate lets it through, the boundary does not as it does.
fn shown(candidate: &Policy, boundary: &Policy, w: &Witness) -> Result<(), String> {
    let p = Probe {
        target: w.target.clone(),
        request: w.request.clone(),
        intercepted: w.intercepted,
        tool: w.tool.clone(),
        operation: w.operation.clone(),
        credential: w.credential.clone(),
    };
    let (mine, theirs) = (judge(candidate, &p, ANYWHERE), judge(boundary, &p, ANYWHERE));
    match (&mine, &theirs) {
        (ProbeOutcome::Allowed { .. }, ProbeOutcome::Refused(_)) => Ok(()),
        (ProbeOutcome::Allowed { asks: false, .. }, ProbeOutcome::Allowed { asks: true, .. }) => Ok(()),
        (ProbeOutcome::Allowed { tls: a, .. }, ProbeOutcome::Allowed { tls: b, .. })
            if p.request.is_none() && a != b =>
        {
            Ok(())
        }
        _ => Err(format!(
            "{w:?} is no counterexample: candidate {mine:?}, boundary {theirs:?}"
        )),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn containment_agrees_with_the_live_decision(
        (boundary, candidate) in prop::collection::vec(rule(), 1..5).prop_flat_map(|base| {
            let own = prop::collection::vec(prop_oneof![3 => derived(base.clone()), 1 => rule()], 1..4);
            (Just(base), own)
        }),
        (b_report, c_report) in (prop::bool::weighted(0.1), prop::bool::weighted(0.1)),
        (b_creds, c_creds) in (creds(), creds()),
        requests in prop::collection::vec(request(), 1..16),
    ) {
        let boundary = policy("boundary", boundary, b_report, b_creds);
        let candidate = policy("candidate", candidate, c_report, c_creds);
        let past = exceeds(&candidate, &boundary, "candidate");
        for e in &past {
            if let Some(w) = &e.counterexample {
                let r = shown(&candidate, &boundary, w);
                prop_assert!(r.is_ok(), "{}: {}\n{:?}", e.path, r.unwrap_err(), candidate.rules);
            }
        }
        if !past.is_empty() {
            return Ok(());
        }
        for p in &requests {
            let mine = judge(&candidate, p, ANYWHERE);
            let ProbeOutcome::Allowed { tls, asks, .. } = mine else { continue };
            let theirs = judge(&boundary, p, ANYWHERE);
            let ProbeOutcome::Allowed { tls: t2, asks: a2, .. } = theirs.clone() else {
                return Err(TestCaseError::fail(format!(
                    "contained, yet the candidate lets {p:?} through and the boundary refuses: {theirs:?}\ncandidate {:?}\nboundary {:?}",
                    candidate.rules, boundary.rules
                )));
            };
            if p.request.is_none() && tls.is_some() {
                prop_assert_eq!(tls, t2, "another TLS mode for {:?}", p);
            }
            prop_assert!(!a2 || asks, "skips the boundary's approval for {:?}\ncandidate {:?}\nboundary {:?}", p, candidate.rules, boundary.rules);
        }
    }
}
