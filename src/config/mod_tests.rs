#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;
use crate::config::credentials::{Inject, SecretSource};

fn errors(yaml: &str) -> Vec<String> {
    match Config::parse("t.yaml", yaml) {
        Ok(_) => vec![],
        Err(e) => e.0.iter().map(|e| e.to_string()).collect(),
    }
}

fn has(errs: &[String], needle: &str) {
    assert!(
        errs.iter().any(|e| e.contains(needle)),
        "no error containing {needle:?} in {errs:#?}"
    );
}

const HASH: &str = "7c43ef5ae21d43ce2743f770c68e24def1a43ee2f416d2438410c8af7af2ff2c";

#[test]
fn embedded_default_is_valid() {
    let c = Config::load(None).unwrap();
    assert_eq!(c.listen.proxy.to_string(), "127.0.0.1:3128");
    assert_eq!(c.audit, AuditConfig::Stdout);
    assert!(c.sandbox("demo").is_some());
    assert_eq!(c.limits.max_request_header_bytes, 64 * 1024);
}

#[test]
fn empty_file_is_an_empty_default_deny_config() {
    let c = Config::parse("t.yaml", "").unwrap();
    assert!(c.sandboxes.is_empty() && c.policies.is_empty());
}

#[test]
fn unknown_keys_name_line_column_and_path() {
    let errs = errors("listen:\n  proxy: 127.0.0.1:3128\n  admn: 1\n");
    assert_eq!(errs.len(), 1);
    assert!(errs[0].starts_with("t.yaml:3:3: "), "{}", errs[0]);
    has(&errs, "unknown field `admn`");
    let errs = errors("policies:\n  web:\n    allow:\n      - host: a.com\n        prots: [1]\n");
    has(&errs, "t.yaml:5:9: policies.web.allow[0]: unknown field `prots`");
}

#[test]
fn syntax_errors_have_locations() {
    let errs = errors("listen:\n  proxy: [\n");
    assert!(errs[0].starts_with("t.yaml:"), "{errs:?}");
}

#[test]
fn every_semantic_error_is_reported_with_its_path() {
    let yaml = format!(
        r#"
listen: {{ proxy: "localhost" }}
audit: {{ path: "" }}
network:
  allow_cidrs: ["10.0.0.1/8", "nonsense"]
  dangerous_allow_metadata: ["1.2.3.4"]
  hosts: {{ "a..b": 1.2.3.4, ok.test: [nope] }}
  resolver: getaddrinfo
timeouts: {{ connect: 0s, drain: forever }}
limits: {{ max_connections: 0, max_request_header_bytes: 10 }}
sandboxes:
  - {{ id: "bad:id", user: "", policy: web, token_sha256: {HASH} }}
  - {{ id: ok, user: u, policy: missing }}
  - {{ id: ok, user: u, policy: web, token_sha256: abc }}
  - {{ id: s1, user: u, policy: web, source_cidrs: ["10.1.0.0/16"] }}
  - {{ id: s2, user: u, policy: web, source_cidrs: ["10.1.2.0/24"] }}
policies:
  web:
    mode: strict
    allow:
      - host: "*"
      - host: "login.*.x.com"
      - host: "bücher.de"
      - host: a.com
        cidrs: ["1.2.3.0/24"]
      - {{}}
      - host: b.com
        ports: [70000]
        methods: [CONNECT, "GE T"]
        paths: ["nope", "/a/["]
      - host: 127.0.0.1
"#
    );
    let errs = errors(&yaml);
    for needle in [
        "listen.proxy: \"localhost\" is not an address and port",
        "audit.path: is empty",
        "network.allow_cidrs[0]: \"10.0.0.1/8\" has bits set below its prefix; did you mean \"10.0.0.0/8\"?",
        "network.allow_cidrs[1]",
        "network.dangerous_allow_metadata[0]",
        "network.hosts.a..b",
        "network.hosts.ok.test[0]",
        "network.resolver: \"getaddrinfo\" is not a resolver: use dns (the default",
        "timeouts.connect",
        "timeouts.drain",
        "limits.max_connections",
        "limits.max_request_header_bytes",
        "sandboxes[0].id",
        "sandboxes[0].user",
        "sandboxes[1].policy: \"missing\" is not a policy",
        "sandboxes[2].id: \"ok\" is declared twice",
        "sandboxes[2].token_sha256",
        "sandboxes[4].source_cidrs[0]: 10.1.2.0/24 overlaps a source range of sandbox \"s1\"",
        "policies.web.mode",
        "policies.web.allow[0].host",
        "policies.web.allow[1].host",
        "policies.web.allow[2].host",
        "policies.web.allow[3]: has both `host` and `cidrs`",
        "policies.web.allow[4]: names no destination",
        "policies.web.allow[5].ports[0]",
        "policies.web.allow[5].methods[0]",
        "policies.web.allow[5].methods[1]",
        "policies.web.allow[5].paths[0]",
        "policies.web.allow[6].host: \"127.0.0.1\" is an IP address; write it under `cidrs:`",
    ] {
        has(&errs, needle);
    }
    assert!(errs.iter().all(|e| e.starts_with("t.yaml: ")), "{errs:#?}");
}

#[test]
fn units_parse() {
    let c = Config::parse(
        "t.yaml",
        "timeouts: { connect: 500ms, request_headers: 1m }\nlimits: { max_request_header_bytes: 16KiB }\n",
    )
    .unwrap();
    assert_eq!(c.timeouts.connect, std::time::Duration::from_millis(500));
    assert_eq!(c.timeouts.request_headers, std::time::Duration::from_secs(60));
    assert_eq!(c.limits.max_request_header_bytes, 16 * 1024);
}

#[test]
fn hosts_are_normalised_and_accept_lists() {
    let c = Config::parse(
        "t.yaml",
        "network:\n  hosts:\n    API.Test.: 10.0.0.1\n    b.test: [10.0.0.2, \"::1\"]\n",
    )
    .unwrap();
    assert_eq!(
        c.network.hosts["api.test"],
        vec!["10.0.0.1".parse::<std::net::IpAddr>().unwrap()]
    );
    assert_eq!(c.network.hosts["b.test"].len(), 2);
}

#[test]
fn shipped_example_configs_are_valid() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/examples");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        // The walkthrough's configuration names files its walkthrough makes first (the local API's CA); the
        // walkthrough itself runs it, `cordon check` included, in tests/it/book/runnable.rs.
        if path.extension().is_some_and(|e| e == "yaml") && !path.ends_with("walkthrough.yaml") {
            Config::load(Some(&path)).unwrap_or_else(|e| unreachable!("{e}"));
            n += 1;
        }
    }
    assert!(n >= 1);
}

#[test]
fn credential_bindings_are_validated_like_rules() {
    let yaml = r#"
credentials:
  c:
    source: { env: PATH }
    bind: { hosts: ["*github.com"], ports: [], methods: [], paths: ["nope"] }
    inject: { header: X-Key }
"#;
    let errs = errors(yaml);
    for needle in [
        "credentials.c.bind.hosts[0]",
        "credentials.c.bind.ports: is empty",
        "credentials.c.bind.methods: is empty",
        "credentials.c.bind.paths[0]",
    ] {
        has(&errs, needle);
    }
}

#[test]
fn a_postgres_store_is_checked_before_anything_connects() {
    // A password in the URL, plain text off loopback, no store key: each named with its path.
    let e = errors("control:\n  store: \"postgres://cordon:hunter2@db.internal/cordon\"\n  signing_key: { env: K }\n");
    has(&e, "control.store: carries a password");
    has(
        &e,
        "control.store: reaches a server off this host without `sslmode=require`",
    );
    has(&e, "control.store_key: is required with a postgres:// store");
    // The store is set, so the signing key is not said to lack one.
    assert!(!e.iter().any(|m| m.contains("control.signing_key")), "{e:?}");
    let e = errors("control:\n  store: \"postgres://c@db.internal/c?sslmode=bogus\"\n  store_key: { env: K }\n");
    has(&e, "control.store: is not a PostgreSQL connection URL");
    // Loopback may go in clear; a good one is accepted.
    assert!(errors("control:\n  store: \"postgres://c@127.0.0.1:5432/c\"\n  store_key: { env: K }\n").is_empty());
    assert!(
        errors("control:\n  store: \"postgres://c@db.internal/c?sslmode=require\"\n  store_password: { env: P }\n  store_key: { file: /k }\n")
            .is_empty()
    );
    // The companions of a PostgreSQL store make no sense with a file; its key does (it seals refresh tokens).
    let e = errors("control:\n  store: state/x.db\n  store_key: { env: K }\n  store_ca_file: /nope.pem\n");
    assert!(!e.iter().any(|m| m.contains("control.store_key")), "{e:?}");
    has(
        &e,
        "control.store_ca_file: is set but control.store is not a postgres:// URL",
    );
    let e = errors("control:\n  store_key: { env: K }\n");
    has(
        &e,
        "control.store_key: is set but control.store is not a postgres:// URL",
    );
}

#[test]
fn methods_are_case_sensitive_tokens_and_typos_of_known_ones_are_refused() {
    let rule =
        |methods: &str| format!("policies:\n  web:\n    allow:\n      - host: a.test\n        methods: {methods}\n");
    let e = errors(&rule("[GETT, get, POST]"));
    has(
        &e,
        "policies.web.allow[0].methods[0]: \"GETT\" is not a method cordon knows; did you mean GET?",
    );
    has(
        &e,
        "policies.web.allow[0].methods[1]: \"get\": methods are case-sensitive (RFC 9110); write GET",
    );
    assert_eq!(e.len(), 2, "{e:?}");
    // An extension method is accepted as written, with a warning that names where it is.
    let c = Config::parse("t.yaml", &rule("[GET, FROBNICATE]")).unwrap();
    assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
    assert!(c.warnings[0].starts_with("t.yaml: policies.web.allow[0].methods[1]: \"FROBNICATE\""));
    assert!(
        Config::parse("t.yaml", &rule("[GET, PATCH, PROPFIND]"))
            .unwrap()
            .warnings
            .is_empty()
    );
}

#[test]
fn audit_rotation_and_retention_are_checked_with_their_paths() {
    let errs = errors(
        "audit:\n  path: \"-\"\n  rotate: { size: 0, every: soon }\n  retain: { files: 0 }\n  checkpoint_interval: 0s\n",
    );
    for needle in [
        "audit.rotate.size",
        "audit.rotate.every",
        "audit.retain.files: 0 must be at least 1",
        "audit.checkpoint_interval",
        "audit.rotate: rotation and retention apply to an audit file",
    ] {
        assert!(errs.iter().any(|e| e.contains(needle)), "{needle}: {errs:#?}");
    }
    let ok = Config::parse(
        "t.yaml",
        "audit:\n  path: /tmp/a.jsonl\n  rotate: { size: 100MiB, every: 1d }\n  retain: { files: 30, age: 90d }\n",
    )
    .unwrap();
    assert_eq!(ok.audit_chain.rotation.size, Some(100 * 1024 * 1024));
    assert_eq!(ok.audit_chain.rotation.keep_files, Some(30));
    assert!(ok.audit_chain.rotation.compress);
}

#[test]
fn audit_export_is_checked_with_its_paths() {
    let errs = errors(
        "audit:\n  path: \"-\"\n  export:\n    otlp:\n      endpoint: \"http://collector.example:4318/v1/logs?x=1\"\n      \
         batch: 0\n      interval: soon\n      headers: { \"bad header\": { env: X } }\n",
    );
    for needle in [
        "audit.export.otlp.endpoint: http://collector.example:4318/v1/logs?x=1 must be an http:// or https:// URL",
        "audit.export.otlp.batch: 0 must be between 1 and 10000",
        "audit.export.otlp.interval",
        "audit.export.otlp.headers.bad header: \"bad header\" is not a header name",
        "audit.export.otlp.spool.path: is needed when audit records go to standard output",
    ] {
        assert!(errs.iter().any(|e| e.contains(needle)), "{needle}: {errs:#?}");
    }
    // A secret header in plaintext off this host is refused; without one, plaintext is a warning.
    let errs = errors(
        "audit:\n  path: /tmp/a.jsonl\n  export:\n    otlp:\n      endpoint: http://collector.example:4318/v1/logs\n      \
         headers: { authorization: { env: OTLP_TOKEN } }\n",
    );
    assert!(
        errs.iter()
            .any(|e| e.contains("audit.export.otlp.endpoint: would send the headers' secrets in plaintext")),
        "{errs:#?}"
    );
    let warned = Config::parse(
        "t.yaml",
        "audit:\n  path: /tmp/a.jsonl\n  export: { otlp: { endpoint: \"http://collector.example:4318/v1/logs\" } }\n",
    )
    .unwrap();
    assert!(
        warned.warnings.iter().any(|w| w.contains("plaintext")),
        "{:?}",
        warned.warnings
    );
    let otlp = warned.audit_chain.otlp.unwrap();
    assert_eq!(otlp.spool, std::path::PathBuf::from("/tmp/a.jsonl.spool"));
    assert_eq!((otlp.batch, otlp.spool_max), (512, 256 << 20));
    assert!(
        errors("audit:\n  export: { otlp: {} }\n")
            .iter()
            .any(|e| e.contains("audit.export.otlp.endpoint: is missing"))
    );
}

#[test]
fn turning_the_chain_off_is_a_warning_and_refused_where_something_needs_it() {
    let off = Config::parse("t.yaml", "audit:\n  chain: false\n").unwrap();
    assert!(!off.audit_chain.enabled);
    assert!(
        off.warnings.iter().any(|w| w.contains("audit.chain: is false")),
        "{:?}",
        off.warnings
    );
    let errs = errors(
        "audit:\n  path: /tmp/a.jsonl\n  chain: false\n  signing_key: { env: K }\n  export: { otlp: { endpoint: \"http://127.0.0.1:4318/v1/logs\" } }\n",
    );
    assert!(
        errs.iter()
            .any(|e| e.contains("audit.chain: false leaves records without the seq")),
        "{errs:#?}"
    );
    assert!(
        errs.iter()
            .any(|e| e.contains("audit.signing_key: signs the chain's checkpoints")),
        "{errs:#?}"
    );
}

#[test]
fn on_violation_is_checked_with_its_paths() {
    let errs = errors(
        "policies:\n  p:\n    on_violation: { metadata: 0, window: soon, action: ban }\n    allow: []\n  q:\n    \
         on_violation: { action: hold }\n    allow: []\n",
    );
    for needle in [
        "policies.p.on_violation.metadata: 0 must be at least 1",
        "policies.p.on_violation.window",
        "policies.p.on_violation.action: \"ban\" is not an action; write revoke or hold",
        "policies.q.on_violation: counts nothing",
    ] {
        assert!(errs.iter().any(|e| e.contains(needle)), "{needle}: {errs:#?}");
    }
    let ok = Config::parse(
        "t.yaml",
        "policies:\n  p:\n    on_violation: { exfiltration: 1, denied: 20, action: revoke }\n    allow: []\n",
    )
    .unwrap();
    let rules = &ok.on_violation["p"];
    use crate::config::violations::ViolationKind;
    assert_eq!(rules.threshold(ViolationKind::Exfiltration), Some(1));
    assert_eq!(rules.threshold(ViolationKind::Metadata), None);
    assert_eq!(rules.window, std::time::Duration::from_secs(600));
}

#[test]
fn credential_budgets_are_checked_with_their_paths() {
    let base = "credentials:\n  gh:\n    source: { env: GH }\n    bind: { hosts: [api.github.com] }\n    \
                inject: { header: Authorization, value: \"token {secret}\" }\n";
    let errs = errors(&format!(
        "{base}    budget: {{ requests: 0, bytes: lots, window: soon, per: team }}\npolicies:\n  p:\n    \
         credentials: [gh]\n    credential_budget: {{ other: {{ requests: 1 }}, gh: {{ window: 1h }} }}\n    allow: []\n"
    ));
    for needle in [
        "credentials.gh.budget.requests: 0 must be at least 1",
        "credentials.gh.budget.bytes",
        "credentials.gh.budget.window",
        "credentials.gh.budget.per: \"team\" is not a subject; write sandbox or user",
        "policies.p.credential_budget.other: \"other\" is not one of this policy's credentials",
        "policies.p.credential_budget.gh: limits nothing; give requests, bytes or both",
    ] {
        assert!(errs.iter().any(|e| e.contains(needle)), "{needle}: {errs:#?}");
    }
    let ok = Config::parse(
        "t.yaml",
        &format!(
            "{base}    budget: {{ requests: 10 }}\npolicies:\n  p:\n    credentials: [gh]\n    credential_budget: \
             {{ gh: {{ bytes: 1MiB, per: user, window: 1d }} }}\n    allow: []\n  q:\n    credentials: [gh]\n    allow: []\n"
        ),
    )
    .unwrap();
    let b = &ok.credential_budgets;
    assert_eq!(b.of("q", &"gh".into()).unwrap().budget.requests, Some(10));
    let p = b.of("p+inline", &"gh".into()).unwrap();
    assert!(p.per_user);
    assert_eq!((p.budget.requests, p.budget.bytes), (None, Some(1 << 20)));
}

#[test]
fn allow_minting_names_known_calls_of_the_credentials_kind() {
    let yaml = r#"
credentials:
  a:
    source: { aws: { access_key_id: { env: K }, secret_access_key: { env: S } } }
    bind: { hosts: [sts.amazonaws.com] }
    allow_minting: [sts:AssumeRol, "iam:createaccesskey"]
  b:
    source: { env: B }
    bind: { hosts: [api.github.com] }
    allow_minting: [sts:AssumeRole, github:deploy_keys, OAUTH2:token_exchange]
  c:
    source: { env: C }
    bind: { hosts: [ghe.example.com] }
    allow_minting: [github:deploy_keys, oauth2:token_exchang]
  d:
    source: { env: D }
    bind: { hosts: [ghe.example.com] }
    kind: gitlab
"#;
    let errs = errors(yaml);
    for needle in [
        "credentials.a.allow_minting[0]: \"sts:AssumeRol\" is not a minting call cordon refuses; for this credential: sts:GetSessionToken",
        "credentials.b.allow_minting[0]: \"sts:AssumeRole\" is a minting call of AWS credentials; this credential is not one",
        "credentials.c.allow_minting[0]: \"github:deploy_keys\" is a minting call of GitHub credentials; this credential is not one (bind it to a GitHub host, or say `kind: github`)",
        "credentials.c.allow_minting[1]: \"oauth2:token_exchang\" is not a minting call cordon refuses; for this credential: oauth2:client_credentials,",
        "credentials.d.kind: \"gitlab\" is not a kind cordon knows; the one there is: github",
    ] {
        assert!(errs.iter().any(|e| e.contains(needle)), "{needle}: {errs:#?}");
    }
    for fine in ["a.allow_minting[1]", "b.allow_minting[1]", "b.allow_minting[2]"] {
        assert!(!errs.iter().any(|e| e.contains(fine)), "{fine}: {errs:#?}");
    }
}

#[test]
fn aws_credentials_are_checked_with_their_paths() {
    let yaml = r#"
credentials:
  a:
    source: { aws: { access_key_id: { env: K }, secret_access_key: { env: S }, assume_role: { role_arn: "role/x", session_name: "a b", duration: 13h, region: mars, session_policy: [1] } } }
    bind: { hosts: [s3.amazonaws.com] }
  b:
    source: { aws: { access_key_id: { env: K }, secret_access_key: { env: S } } }
    bind: { hosts: [s3.amazonaws.com] }
    inject: { header: Authorization }
  c:
    source: { env: C }
    bind: { hosts: [s3.amazonaws.com] }
    inject: { aws_sigv4: { region: "US-EAST-1", service: "S3!" } }
  d:
    source: { aws: { access_key_id: { env: K }, secret_access_key: {} } }
    bind: { hosts: [sts.amazonaws.com] }
    inject: { aws_sigv4: {}, placeholder: {} }
  e:
    source: { aws: { access_key_id: { env: K }, secret_access_key: { env: S } } }
    bind: { hosts: [sts.amazonaws.com] }
  f:
    source: { aws: { access_key_id: { env: K }, secret_access_key: { env: S } } }
    bind: { hosts: [sts.amazonaws.com] }
    mask_echo: true
policies:
  p:
    credentials: [e]
    credential_scope: { e: { session_policy: { Version: "2012-10-17" } } }
    allow: []
"#;
    let errs = errors(yaml);
    for needle in [
        "credentials.a.source.aws.assume_role.role_arn: \"role/x\" is not a role ARN",
        "credentials.a.source.aws.assume_role.session_name: \"a b\" is not a session name",
        "credentials.a.source.aws.assume_role.duration: must be between 15m and 12h",
        "credentials.a.source.aws.assume_role.region: \"mars\" is not an AWS region name",
        "credentials.a.source.aws.assume_role.session_policy: must be an IAM policy document",
        "credentials.b.inject: AWS keys are applied by signing the request",
        "credentials.c.inject.aws_sigv4.region: \"US-EAST-1\" is not an AWS region name",
        "credentials.c.inject.aws_sigv4.service: \"S3!\" is not an AWS service signing name",
        "credentials.d.source.aws.secret_access_key: needs exactly one of",
        "credentials.d.inject: `aws_sigv4` signs the request; it takes no",
        "policies.p.credential_scope.e: an AWS credential takes only `session_policy`, and only with `assume_role`",
        "credentials.f.mask_echo: an AWS secret never leaves cordon",
    ] {
        assert!(errs.iter().any(|e| e.contains(needle)), "{needle}: {errs:#?}");
    }
    let ok = Config::parse(
        "t.yaml",
        "credentials:\n  s3:\n    source: { aws: { access_key_id: { env: K }, secret_access_key: { vault: aws }, \
         assume_role: { role_arn: \"arn:aws:iam::123456789012:role/agent\" } } }\n    bind: { hosts: [\"*.amazonaws.com\"] }\n",
    )
    .unwrap();
    let spec = &ok.credentials["s3"];
    assert!(matches!(
        spec.inject,
        Inject::AwsSigV4 {
            region: None,
            service: None
        }
    ));
    let role = match &spec.source {
        SecretSource::Aws(aws) => aws.assume_role.clone(),
        _ => None,
    };
    let role = role.unwrap();
    assert_eq!(
        (
            role.session_name.as_str(),
            role.duration.as_secs(),
            role.region.as_str()
        ),
        ("cordon", 3600, "us-east-1")
    );
    assert_eq!(role.endpoint.to_string(), "https://sts.us-east-1.amazonaws.com/");
}

#[test]
fn previews_are_checked_with_their_paths() {
    let errs = errors(
        "listen: { preview: 0.0.0.0:8443 }\npreviews: { domain: \"not a domain\", link_ttl: 2d, session_ttl: 0s }\n\
         policies:\n  p:\n    expose: [3000, 3000, 0, 70000]\n    allow: []\n",
    );
    for needle in [
        "previews.domain: \"not a domain\" is not a domain name",
        "previews.tls: is missing and listen.preview (0.0.0.0:8443) is not a loopback address",
        "previews.link_ttl: must be at most 1day",
        "previews.session_ttl: \"0s\" is zero",
        "policies.p.expose[1]: 3000 is listed twice",
        "policies.p.expose[2]: 0 is not a port (1 to 65535)",
        "policies.p.expose[3]: 70000 is not a port (1 to 65535)",
    ] {
        assert!(errs.iter().any(|e| e.contains(needle)), "{needle}: {errs:#?}");
    }
    let errs = errors("previews: { domain: preview.example.com }\n");
    assert!(
        errs.iter()
            .any(|e| e.contains("previews: is set but listen.preview is not")),
        "{errs:#?}"
    );
    let errs = errors("listen: { preview: 127.0.0.1:8443 }\n");
    assert!(
        errs.iter()
            .any(|e| e.contains("listen.preview: is set but `previews` is not")),
        "{errs:#?}"
    );
    let errs =
        errors("listen: { proxy: 127.0.0.1:3128, preview: 127.0.0.1:3128 }\npreviews: { domain: p.example.com }\n");
    assert!(
        errs.iter()
            .any(|e| e.contains("listen.preview") && e.contains("each listener needs its own")),
        "{errs:#?}"
    );
    let ok = Config::parse(
        "t.yaml",
        "listen: { preview: 127.0.0.1:8443 }\npreviews: { domain: Preview.Example.Com. }\npolicies:\n  p:\n    expose: [3000]\n    allow: []\n",
    )
    .unwrap();
    let p = ok.previews.as_ref().unwrap();
    assert_eq!(
        (p.domain.as_str(), p.link_ttl.as_secs(), p.session_ttl.as_secs()),
        ("preview.example.com", 300, 3600)
    );
    assert_eq!(ok.policies["p"].expose, [3000]);
}
