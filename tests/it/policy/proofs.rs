//! The policy commands on the docs' example configuration, and their errors.

use std::path::PathBuf;

use serde_json::Value;

use crate::rigs::process::cordon;

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("config/examples")
}

/// `cordon policy COMMAND --json --config boundaries.yaml A B`, from the examples folder: (exit, the JSON).
fn policy(command: &str, a: &str, b: &str) -> (i32, Value) {
    let dir = examples();
    let config = dir.join("boundaries.yaml").display().to_string();
    let (a, b) = (resolve(a), resolve(b));
    let (code, out, err) = cordon(&["policy", command, "--json", "--config", &config, &a, &b]);
    let json = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    (code, json)
}

/// A file argument, made absolute (it names a file by its `/`).
fn resolve(arg: &str) -> String {
    if arg.contains('/') {
        examples().join(arg).display().to_string()
    } else {
        arg.to_string()
    }
}

/// `cordon explain --sandbox ID --method M URL` on the example, its names given a public address in
/// `network.hosts` (nothing resolves here; explain dials nothing): its exit status.
fn explain(sandbox: &str, method: &str, url: &str) -> i32 {
    let dir = tempfile::tempdir().unwrap();
    let mut text = std::fs::read_to_string(examples().join("boundaries.yaml")).unwrap();
    text.push_str("network:\n  hosts:\n");
    for name in [
        "api.github.com",
        "uploads.github.com",
        "mcp.example.com",
        "graphql.example.com",
        "cordon-probe.cdn.example.com",
    ] {
        text.push_str(&format!("    {name}: 140.82.112.3\n"));
    }
    let file = dir.path().join("cordon.yaml");
    std::fs::write(&file, text).unwrap();
    let config = file.display().to_string();
    let (code, out, err) = cordon(&[
        "explain",
        "--config",
        &config,
        "--sandbox",
        sandbox,
        "--method",
        method,
        url,
    ]);
    assert!(code == 0 || code == 1, "{out}\n{err}");
    code
}

/// The findings of `key`, each (path, kind, counterexample).
fn findings<'a>(v: &'a Value, key: &str) -> Vec<(&'a str, &'a str, &'a Value)> {
    v[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap(),
                f["kind"].as_str().unwrap(),
                &f["counterexample"],
            )
        })
        .collect()
}

#[test]
fn contains_proves_a_grant_inside_the_boundary_and_refutes_one_past_it() {
    let (code, v) = policy("contains", "boundary:ci", "policies/grant.yaml");
    assert_eq!((code, v["contained"].as_bool()), (0, Some(true)), "{v:#}");
    let (code, v) = policy("contains", "boundary:ci", "ci");
    assert_eq!(code, 0, "the policy lies inside its own boundary: {v:#}");

    let (code, v) = policy("contains", "boundary:ci", "policies/past.yaml");
    assert_eq!((code, v["contained"].as_bool()), (1, Some(false)), "{v:#}");
    let found = findings(&v, "exceeds");
    let kinds: Vec<&str> = found.iter().map(|(_, k, _)| *k).collect();
    assert_eq!(kinds, ["path", "MCP tool", "GraphQL operation"], "{v:#}");
    // A path under a host the boundary already reaches, with the credential it would carry.
    let (path, _, w) = found[0];
    assert_eq!(path, "allow[0].paths");
    assert_eq!(w["url"], "https://api.github.com:443/user/x/x");
    assert_eq!(w["credentials_carried"], serde_json::json!(["github"]));
    // An MCP tool the boundary denies, a GraphQL mutation sent without the approval it asks.
    assert_eq!(found[1].2["mcp_tool"], "delete_repo", "{v:#}");
    assert_eq!(found[1].2["method"], "POST");
    assert_eq!(found[2].2["graphql"]["field"], "addComment", "{v:#}");
    assert!(
        found[2].2["refused"].as_str().unwrap().contains("skips the approval"),
        "{v:#}"
    );
}

#[test]
fn every_counterexample_is_decided_the_same_way_by_explain() {
    // ci-wide is the policy of sandbox wide-1, ci of ci-1 (ci lies inside boundary:ci, which is narrower than
    // ci-wide in everything the counterexamples show).
    let (code, v) = policy("diff", "ci", "ci-wide");
    assert_eq!((code, v["adds"].as_bool()), (1, Some(true)), "{v:#}");
    let mut checked = 0;
    for (path, kind, w) in findings(&v, "added") {
        if w["method"] == "CONNECT" {
            assert_eq!(kind, "TLS mode", "{path}: {w:#}");
            continue;
        }
        let (method, url) = (w["method"].as_str().unwrap(), w["url"].as_str().unwrap());
        assert_eq!(
            explain("wide-1", method, url),
            0,
            "{path}: ci-wide allows {method} {url}"
        );
        assert_eq!(explain("ci-1", method, url), 1, "{path}: ci refuses {method} {url}");
        checked += 1;
    }
    assert!(checked >= 2, "{v:#}");
    // And the other way: what ci allows that ci-wide does not.
    for (path, _, w) in findings(&v, "removed") {
        if w["method"] == "CONNECT" || w.is_null() {
            continue;
        }
        let (method, url) = (w["method"].as_str().unwrap(), w["url"].as_str().unwrap());
        assert_eq!(explain("ci-1", method, url), 0, "{path}: ci allows {method} {url}");
        assert_eq!(
            explain("wide-1", method, url),
            1,
            "{path}: ci-wide refuses {method} {url}"
        );
    }
}

#[test]
fn diff_names_a_credential_reaching_a_new_host_and_a_tunnel_over_interception() {
    let (code, v) = policy("diff", "ci", "ci-wide");
    assert_eq!(code, 1);
    let added = findings(&v, "added");
    let new_host = added.iter().find(|(_, k, _)| *k == "destination").unwrap().2;
    assert_eq!(new_host["host"], "uploads.github.com", "{v:#}");
    assert_eq!(new_host["credentials_carried"], serde_json::json!(["github"]), "{v:#}");
    let tunnel = added.iter().find(|(_, k, _)| *k == "TLS mode").unwrap();
    assert_eq!(tunnel.0, "policies.ci-wide.allow[2].tls");
    assert_eq!(tunnel.2["method"], "CONNECT");
    assert!(tunnel.2["refused"].as_str().unwrap().contains("intercept"), "{v:#}");
    // Nothing added: exit 0.
    let (code, v) = policy("diff", "ci", "ci");
    assert_eq!((code, v["adds"].as_bool()), (0, Some(false)), "{v:#}");
    assert!(v["added"].as_array().unwrap().is_empty());
}

#[test]
fn check_refuses_a_policy_past_its_own_boundary_with_the_path_and_a_request() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cordon.yaml");
    std::fs::write(
        &file,
        "sandboxes: []\npolicies:\n  p:\n    allow:\n      - host: api.example.com\n        paths: [\"/v1/**\", \"/admin/**\"]\n    \
         boundary:\n      allow:\n        - host: api.example.com\n          paths: [\"/v1/**\"]\n",
    )
    .unwrap();
    let file = file.display().to_string();
    for command in ["check", "run"] {
        let (code, _, err) = cordon(&[command, "--config", &file]);
        assert_eq!(code, 2, "{command}: {err}");
        assert!(
            err.contains("policies.p.allow[0].paths: goes past the policy's boundary"),
            "{command}: {err}"
        );
        assert!(
            err.contains("https://api.example.com:443/admin/x/x"),
            "{command}: {err}"
        );
    }
}

/// `ask` matches MCP tools and GraphQL fields in any case, `tools` and `operations` exactly: a policy that asks
/// for what its boundary lets through only as written goes past it (a person could let `READ_FILE` through), and
/// `check` and `policy contains` say so; the same policy under a boundary that asks too, or takes any name, holds.
#[test]
fn asking_in_any_case_is_not_inside_letting_through_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, inner: &str, outer: &str| {
        let file = dir.path().join(name);
        std::fs::write(
            &file,
            format!(
                "sandboxes: []\npolicies:\n  p:\n    allow:\n      - {{ host: mcp.example.com, {inner} }}\n    \
                 boundary:\n      allow:\n        - {{ host: mcp.example.com, {outer} }}\n"
            ),
        )
        .unwrap();
        file.display().to_string()
    };
    for (inner, outer, holds) in [
        ("mcp: { ask: [read_file] }", "mcp: { tools: [read_file] }", false),
        ("mcp: { ask: [read_file] }", "mcp: { tools: [\"read_*\"] }", false),
        ("mcp: { ask: [read_file] }", "mcp: { ask: [read_file] }", true),
        ("mcp: { ask: [read_file] }", "mcp: { tools: [\"*\"] }", true),
        (
            "graphql: { ask: [mutation.addComment] }",
            "graphql: { operations: [mutation.addComment] }",
            false,
        ),
        (
            "graphql: { ask: [mutation.addComment] }",
            "graphql: { operations: [mutation] }",
            true,
        ),
    ] {
        let file = write("cordon.yaml", inner, outer);
        let (code, _, err) = cordon(&["check", "--config", &file]);
        if holds {
            assert_eq!(code, 0, "{inner} under {outer}: {err}");
        } else {
            assert_eq!(code, 2, "{inner} under {outer}: accepted");
            assert!(err.contains("matches in any case"), "{inner} under {outer}: {err}");
        }
    }
}

#[test]
fn bad_input_is_named_with_where_it_is() {
    let config = examples().join("boundaries.yaml").display().to_string();
    let run = |a: &str, b: &str| cordon(&["policy", "contains", "--config", &config, a, b]);
    let (code, _, err) = run("boundary:ci", "/nonexistent/p.yaml");
    assert_eq!(code, 2);
    assert!(err.contains("cannot read the policy file /nonexistent/p.yaml"), "{err}");
    let (code, _, err) = run("nosuch", "ci");
    assert_eq!(code, 2);
    assert!(
        err.contains("there is no policy \"nosuch\"") && err.contains("ci, ci-wide"),
        "{err}"
    );
    let (code, _, err) = run("boundary:ci-wide", "ci");
    assert_eq!(code, 2);
    assert!(err.contains("policy \"ci-wide\" has no boundary"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "allow:\n  - host: a.example.com\n    prots: [443]\n").unwrap();
    let (code, _, err) = run("ci", &bad.display().to_string());
    assert_eq!(code, 2);
    assert!(err.contains("bad.yaml:3:5") && err.contains("prots"), "{err}");
    std::fs::write(&bad, "credentials: [nope]\nallow:\n  - host: \"*\"\n").unwrap();
    let (code, _, err) = run("ci", &bad.display().to_string());
    assert_eq!(code, 2);
    assert!(
        err.contains("credentials[0]") && err.contains("\"nope\" is not a credential"),
        "{err}"
    );
    assert!(err.contains("allow[0].host"), "{err}");
}
