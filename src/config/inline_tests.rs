#![expect(clippy::expect_used, clippy::unwrap_used, reason = "tests")]
use super::*;
use serde_json::json;

const FILE: &str = r#"
credentials:
  gh:
    source: { env: GH }
    bind: { hosts: [github.com] }
    inject: { header: Authorization }
  pypi:
    source: { env: PYPI }
    bind: { hosts: [pypi.org] }
    inject: { header: Authorization }
policies:
  web:
    credentials: [gh, pypi]
    allow:
      - host: github.com
        methods: [GET, POST]
        paths: ["/acme/**"]
      - host: "*.pythonhosted.org"
      - host: pypi.org
        ports: [443]
      - host: approve.example.com
        action: ask
      - host: pinned.example.com
        tls: tunnel
      - cidrs: ["10.1.0.0/16"]
        ports: [8080]
  loose:
    mode: report
    allow:
      - host: example.com
"#;

fn config() -> Config {
    Config::parse("t.yaml", FILE).expect("config")
}

fn check(doc: serde_json::Value) -> Result<InlinePolicy, Vec<FieldError>> {
    inline_policy(&config(), "sb-1", "policy", &doc)
}

fn errors(doc: serde_json::Value) -> Vec<(String, bool)> {
    let errs = check(doc).expect_err("refused");
    for e in &errs {
        assert!(!e.message.is_empty(), "{e:?}");
    }
    errs.into_iter().map(|e| (e.path, e.exceeds)).collect()
}

#[test]
fn a_narrower_policy_is_accepted_with_the_bases_credentials() {
    let p = check(json!({
        "extends": "web",
        "allow": [
            {"host": "github.com", "methods": ["GET"], "paths": ["/acme/web/**"]},
            {"host": "files.pythonhosted.org"},
            {"host": "pypi.org", "ports": [443]},
            {"host": "approve.example.com", "action": "ask"},
            {"host": "pinned.example.com", "tls": "tunnel"},
            {"cidrs": ["10.1.2.0/24"], "ports": [8080]},
        ]
    }))
    .expect("within the base");
    assert_eq!(p.extends, "web");
    assert_eq!(p.policy.rules.len(), 6);
    assert_eq!(p.policy.credentials, vec!["gh".to_string(), "pypi".to_string()]);
    assert!(p.warnings.is_empty());
    let p = check(json!({"extends": "web", "allow": [{"host": "pypi.org", "ports": [443]}], "credentials": ["pypi"]}))
        .expect("fewer credentials");
    assert_eq!(p.policy.credentials, vec!["pypi".to_string()]);
}

#[test]
fn what_exceeds_the_base_is_named_with_its_path() {
    assert_eq!(
        errors(json!({"extends": "web", "allow": [
            {"host": "gitlab.com"},
            {"host": "github.com", "methods": ["GET", "DELETE"], "paths": ["/acme/**"]},
            {"host": "github.com", "paths": ["/acme/**"]},
            {"host": "github.com", "methods": ["GET"]},
            {"host": "github.com", "methods": ["GET"], "paths": ["/**"]},
            {"host": "pypi.org"},
            {"host": "approve.example.com"},
            {"host": "pinned.example.com"},
            {"host": "pythonhosted.org"},
            {"cidrs": ["10.0.0.0/8"], "ports": [8080]},
        ], "credentials": ["gh", "other"], "mode": "report"})),
        vec![
            ("policy.mode".to_string(), true),
            ("policy.credentials[1]".to_string(), true),
            ("policy.allow[0].host".to_string(), true),
            ("policy.allow[1].methods".to_string(), true),
            ("policy.allow[2].methods".to_string(), true),
            ("policy.allow[3].paths".to_string(), true),
            ("policy.allow[4].paths".to_string(), true),
            ("policy.allow[5].ports".to_string(), true),
            ("policy.allow[6].action".to_string(), true),
            ("policy.allow[7].tls".to_string(), true),
            ("policy.allow[8].host".to_string(), true),
            ("policy.allow[9].cidrs".to_string(), true),
        ]
    );
}

#[test]
fn invalid_values_get_the_files_messages_at_json_paths() {
    assert_eq!(
        errors(json!({"extends": "web", "allow": [{"host": "*"}, {"host": "github.com", "methods": ["GETT"]}]})),
        vec![
            ("policy.allow[0].host".to_string(), false),
            ("policy.allow[1].methods[0]".to_string(), false),
        ]
    );
    let e = check(json!({"extends": "web", "allow": [{"host": "github.com", "methods": ["GETT"]}]})).unwrap_err();
    assert!(e[0].message.contains("did you mean GET"), "{e:?}");
    assert_eq!(
        errors(json!({"extends": "web", "allow": [{"hots": "x"}]})),
        vec![("policy.allow[0].hots".to_string(), false)]
    );
    assert_eq!(
        errors(json!({"extends": "web", "allow": [{"host": "a.b", "ports": ["443"]}]})),
        vec![("policy.allow[0].ports[0]".to_string(), false)]
    );
    assert_eq!(errors(json!({"allow": []})), vec![("policy".to_string(), false)]);
    assert_eq!(
        errors(json!({"extends": "nope"})),
        vec![("policy.extends".to_string(), false)]
    );
    assert_eq!(errors(json!("web")), vec![("policy".to_string(), false)]);
    assert_eq!(
        errors(json!({"extends": "web", "credential_scope": {"gh": {"scope": "x"}}})),
        vec![("policy.credential_scope".to_string(), false)]
    );
}

#[test]
fn a_report_base_lets_the_inline_policy_report() {
    let p = check(json!({"extends": "loose", "mode": "report", "allow": [{"host": "example.com"}]})).expect("ok");
    assert_eq!(p.policy.mode, crate::policy::Mode::Report);
}

#[test]
fn spellings_that_would_widen_are_refused_or_normalised() {
    // Normalised to what the base names (case, a trailing dot): accepted, and the same name.
    let p = check(json!({"extends": "web", "allow": [{"host": "PyPI.org.", "ports": [443]}]})).expect("normalised");
    assert_eq!(
        p.policy.rules[0].host.as_ref().map(ToString::to_string).as_deref(),
        Some("pypi.org")
    );
    for (allow, path) in [
        // A wider or look-alike name.
        (json!({"host": "*.org", "ports": [443]}), "policy.allow[0].host"),
        (
            json!({"host": "pypi.org.evil.example", "ports": [443]}),
            "policy.allow[0].host",
        ),
        (json!({"host": "pythonhosted.org"}), "policy.allow[0].host"),
        // The same range in another family, or a wider one.
        (
            json!({"cidrs": ["::ffff:10.1.0.0/112"], "ports": [8080]}),
            "policy.allow[0].cidrs",
        ),
        (
            json!({"cidrs": ["10.0.0.0/15"], "ports": [8080]}),
            "policy.allow[0].cidrs",
        ),
        // Paths out of the base's prefix by globbing the prefix itself.
        (
            json!({"host": "github.com", "methods": ["GET"], "paths": ["/acm?/**"]}),
            "policy.allow[0].paths",
        ),
        (
            json!({"host": "github.com", "methods": ["GET"], "paths": ["/{acme,other}/**"]}),
            "policy.allow[0].paths",
        ),
        (
            json!({"host": "github.com", "methods": ["GET"], "paths": ["/**"]}),
            "policy.allow[0].paths",
        ),
        // An extension method the base does not list.
        (
            json!({"host": "github.com", "methods": ["PROPFIND"], "paths": ["/acme/**"]}),
            "policy.allow[0].methods",
        ),
    ] {
        let got = errors(json!({"extends": "web", "allow": [allow.clone()]}));
        assert_eq!(got, vec![(path.to_string(), true)], "{allow}");
    }
    // A lower-case method is refused as the file refuses it.
    assert_eq!(
        errors(json!({"extends": "web", "allow": [{"host": "github.com", "methods": ["get"], "paths": ["/acme/**"]}]})),
        vec![("policy.allow[0].methods[0]".to_string(), false)]
    );
}
