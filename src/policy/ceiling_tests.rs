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

use crate::policy::testing::rule;

fn policy(name: &str, rules: Vec<Rule>) -> Policy {
    Policy::new(name.into(), Mode::Enforce, rules).expect("a policy")
}

/// The base of issue 34: rule 0 intercepts api.example.com for GET /v1/**, rule 1 tunnels *.example.com.
fn base() -> Policy {
    use crate::policy::TlsMode::*;
    let mut read = rule("api.example.com", Intercept);
    read.methods = Some(vec![http::Method::GET]);
    read.path_texts = vec!["/v1/**".into()];
    read.paths = Some(crate::policy::allowlist::compile_paths(&read.path_texts).expect("globs"));
    policy("base", vec![read, rule("*.example.com", Tunnel)])
}

#[test]
fn the_base_is_held_to_what_it_decides_not_to_a_rule_that_contains() {
    use crate::policy::TlsMode::*;
    let judged = |own: Vec<Rule>| exceeds(&policy("own", own), &base(), "policy");
    // A blind tunnel to a host the base intercepts, named exactly or under a wildcard that covers it.
    for own in [rule("api.example.com", Tunnel), rule("*.example.com", Tunnel)] {
        let e = judged(vec![own]);
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0].path, "policy.allow[0].tls");
        assert!(e[0].message.contains("api.example.com"), "{}", e[0].message);
    }
    // Everything a request inside api.example.com may do, only within rule 0.
    let e = judged(vec![rule("api.example.com", Intercept)]);
    assert_eq!(e[0].path, "policy.allow[0].methods", "{e:?}");
    let mut narrow = rule("api.example.com", Intercept);
    narrow.methods = Some(vec![http::Method::GET]);
    narrow.path_texts = vec!["/v1/models".into()];
    narrow.paths = Some(crate::policy::allowlist::compile_paths(&narrow.path_texts).expect("globs"));
    assert!(judged(vec![narrow]).is_empty());
    // Other names under the wildcard are the base's tunnels, and only tunnels.
    assert!(judged(vec![rule("www.example.com", Tunnel), rule("*.cdn.example.com", Tunnel)]).is_empty());
    assert_eq!(
        judged(vec![rule("www.example.com", Intercept)])[0].path,
        "policy.allow[0].tls"
    );
    // A port the governing rule lacks, though a wider rule has it.
    let mut wide = base();
    wide.rules[1].ports = vec![80, 443, 8443];
    let wide = policy("base", wide.rules);
    let mut odd = rule("api.example.com", Tunnel);
    odd.ports = vec![8443];
    let e = exceeds(&policy("own", vec![odd]), &wide, "policy");
    assert_eq!(e[0].path, "policy.allow[0].ports", "{e:?}");
}

#[test]
fn an_approval_of_the_governing_rule_is_kept() {
    use crate::policy::TlsMode::*;
    let mut ask = rule("api.example.com", Intercept);
    ask.action = Action::Ask;
    let base = policy("base", vec![ask, rule("*.example.com", Intercept)]);
    let e = exceeds(&policy("own", vec![rule("*.example.com", Intercept)]), &base, "policy");
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].path, "policy.allow[0].action");
    let mut asked = rule("*.example.com", Intercept);
    asked.action = Action::Ask;
    assert!(exceeds(&policy("own", vec![asked]), &base, "policy").is_empty());
}

#[test]
fn an_own_rule_keeps_every_protocol_section_that_could_answer_first() {
    use crate::policy::TlsMode::*;
    use std::sync::Arc;
    let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let graphql = |ops: &[&str], ask: &[&str], deny: &[&str]| {
        Some(Arc::new(
            crate::policy::graphql::GraphqlRules::new(v(ops), v(ask), v(deny), Vec::new()).expect("graphql"),
        ))
    };
    let mcp = |tools: &[&str], deny: &[&str]| {
        Some(Arc::new(
            crate::policy::mcp::McpRules::new(v(tools), Vec::new(), v(deny), Vec::new()).expect("mcp"),
        ))
    };
    let mut gql = rule("api.example.com", Intercept);
    gql.graphql = graphql(&["query"], &["mutation"], &["mutation.delete*"]);
    let mut tools = rule("mcp.example.com", Intercept);
    tools.mcp = mcp(&["read_*"], &["delete_*"]);
    let base = policy("base", vec![gql, tools, rule("*.example.com", Intercept)]);
    // Without the section, with a wider one, with a section missing a denial: refused at the field that is wrong.
    for (host, g, m, field) in [
        ("api.example.com", None, None, "policy.allow[0].graphql"),
        (
            "api.example.com",
            graphql(&["query", "mutation"], &[], &["mutation.delete*"]),
            None,
            "policy.allow[0].graphql.operations",
        ),
        (
            "api.example.com",
            graphql(&["query"], &["mutation"], &[]),
            None,
            "policy.allow[0].graphql.deny",
        ),
        ("*.example.com", None, None, "policy.allow[0].graphql"),
        ("mcp.example.com", None, None, "policy.allow[0].mcp"),
        (
            "mcp.example.com",
            None,
            mcp(&["*"], &["delete_*"]),
            "policy.allow[0].mcp.tools",
        ),
    ] {
        let mut own = rule(host, Intercept);
        own.graphql = g;
        own.mcp = m;
        let e = exceeds(&policy("own", vec![own]), &base, "policy");
        assert_eq!(e.first().map(|e| e.path.as_str()), Some(field), "{host}: {e:?}");
    }
    // A narrower section is kept.
    let mut own = rule("api.example.com", Intercept);
    own.graphql = graphql(&["query.issues"], &["mutation"], &["mutation.delete*", "subscription"]);
    assert!(exceeds(&policy("own", vec![own]), &base, "policy").is_empty());
    let mut own = rule("mcp.example.com", Intercept);
    own.mcp = mcp(&["read_file"], &["delete_*"]);
    assert!(exceeds(&policy("own", vec![own]), &base, "policy").is_empty());
}
