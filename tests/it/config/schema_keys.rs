//! A key cordon.yaml does not have is refused wherever it is written, by the schema (docs/cordon.schema.json: an
//! editor flags it at that place) as by `cordon check` (exit 2, naming the key and where), starting from a
//! configuration that both take and that has something in every place.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use super::schema::{errors, json_of, schema, validator};
use crate::rigs::process::BIN;
use crate::rigs::tls::test_ca;
use crate::rigs::wait::{TimedChild, Within};

/// A configuration with something in every place [`PLACES`] names, which `cordon check` takes (`DIR` is the
/// test's folder).
const FULL: &str = r#"
listen:
  proxy: 127.0.0.1:3128
  admin: 127.0.0.1:9090
  preview: 127.0.0.1:8443
  console: 127.0.0.1:9443
admin:
  tls: { cert: { file: DIR/cert.pem }, key: { file: DIR/key.pem } }
console:
  url: https://127.0.0.1:9443
  tls: { cert: { file: DIR/cert.pem }, key: { file: DIR/key.pem } }
  oidc:
    issuer: https://idp.example.com
    client_id: cordon
    client_secret: { env: CORDON_SCHEMA_TEST_SECRET }
    roles: { ops: [approver] }
previews:
  domain: preview.localhost
  tls: { cert: { file: DIR/cert.pem }, key: { file: DIR/key.pem } }
control:
  admin_token: { file: DIR/secret }
  admin_tokens:
    - { name: ci, roles: [platform], token: { env: CORDON_SCHEMA_TEST_SECRET } }
  signing_key: { file: DIR/secret }
  store: DIR/cordon.db
approval:
  timeout: 5m
  webhook: { url: "https://hooks.example.com/cordon", secret: { env: CORDON_SCHEMA_TEST_SECRET } }
audit:
  path: DIR/audit.jsonl
  signing_key: { file: DIR/secret }
  rotate: { size: 100MiB, every: 1d }
  retain: { files: 5, age: 30d }
  export:
    otlp:
      endpoint: "http://127.0.0.1:4318/v1/logs"
      headers: { x-api-key: { env: CORDON_SCHEMA_TEST_SECRET } }
      spool: { path: DIR/spool, max: 256MiB }
log:
  format: text
network:
  allow_cidrs: ["10.9.0.0/16"]
  hosts: { app.test: 127.0.0.1 }
timeouts:
  connect: 10s
limits:
  max_request_header_bytes: 64KiB
  per_sandbox: { requests: { per_second: 50, burst: 100 }, upload: 1GiB, budget_window: 1h }
  per_user: { max_open: 100, jails: 4 }
  per_source: { unauthenticated: 64, auth_failures: { per_second: 5 } }
ca:
  dir: DIR/certs
upstream:
  pool_idle: 90s
vault:
  file: { path: DIR/vault.bin }
  openbao:
    addr: https://bao.example.com:8200
    approle: { role_id: cordon, secret_id_env: CORDON_SCHEMA_TEST_SECRET }
jail:
  cpu: 1.5
  memory: 2GiB
credentials:
  from-env:
    source: { env: CORDON_SCHEMA_TEST_SECRET }
    bind: { hosts: [api.example.com] }
    inject: { header: Authorization, value: "Bearer {secret}" }
    budget: { requests: 1000, window: 1h }
  from-file:
    source: { file: DIR/secret }
    bind: { hosts: [files.example.com] }
    inject: { placeholder: { query: true } }
  from-vault:
    source: { vault: stored }
    bind: { hosts: [vault.example.com] }
    inject: { basic_user: me }
  from-openbao:
    source: { openbao: "cordon/api#token" }
    bind: { hosts: [bao.example.com] }
    inject: { header: X-Token, value: "{secret}" }
  oauth:
    source:
      oauth2: { token_url: "https://idp.example.com/token", client_id: cordon, client_secret: { env: CORDON_SCHEMA_TEST_SECRET } }
    bind: { hosts: [oauth.example.com] }
    inject: { header: Authorization, value: "Bearer {secret}" }
  app:
    source:
      github_app: { app_id: "12345", installation_id: 678, private_key: { file: DIR/key.pem } }
    bind: { hosts: [api.github.com] }
    inject: { header: Authorization, value: "token {secret}" }
  keys:
    source:
      aws:
        access_key_id: { env: CORDON_SCHEMA_TEST_SECRET }
        secret_access_key: { env: CORDON_SCHEMA_TEST_SECRET }
        assume_role: { role_arn: "arn:aws:iam::123456789012:role/agent" }
    bind: { hosts: [s3.us-east-1.amazonaws.com] }
    inject: { aws_sigv4: { region: us-east-1 } }
sandboxes:
  - id: demo
    user: demo-user
    token_sha256: 7c43ef5ae21d43ce2743f770c68e24def1a43ee2f416d2438410c8af7af2ff2c
    policy: agents
policies:
  agents:
    credentials: [from-env, app]
    credential_scope: { app: { repositories: [acme/app] } }
    on_violation: { metadata: 3, window: 10m, action: hold }
    jail: { memory: 1GiB }
    allow:
      - host: example.com
        ports: [443]
      - host: mcp.example.com
        mcp: { tools: [search], ask: ["write_*"] }
      - host: graph.example.com
        graphql: { operations: [query], ask: [mutation] }
"#;

/// The places of [`FULL`] a key is added to, as paths (a number is a list's index).
const PLACES: &[&str] = &[
    "",
    "listen",
    "admin",
    "admin.tls",
    "admin.tls.cert",
    "console",
    "console.tls",
    "console.oidc",
    "previews",
    "previews.tls",
    "control",
    "control.admin_token",
    "control.admin_tokens.0",
    "approval",
    "approval.webhook",
    "audit",
    "audit.rotate",
    "audit.retain",
    "audit.export",
    "audit.export.otlp",
    "audit.export.otlp.spool",
    "log",
    "network",
    "timeouts",
    "limits",
    "limits.per_sandbox",
    "limits.per_sandbox.requests",
    "limits.per_user",
    "limits.per_source",
    "ca",
    "upstream",
    "vault",
    "vault.file",
    "vault.openbao",
    "vault.openbao.approle",
    "jail",
    "credentials.from-env",
    "credentials.from-env.source",
    "credentials.from-env.bind",
    "credentials.from-env.inject",
    "credentials.from-env.budget",
    "credentials.from-file.source",
    "credentials.from-file.inject.placeholder",
    "credentials.from-vault.source",
    "credentials.from-openbao.source",
    "credentials.oauth.source.oauth2",
    "credentials.app.source.github_app",
    "credentials.keys.source.aws",
    "credentials.keys.source.aws.assume_role",
    "credentials.keys.inject.aws_sigv4",
    "sandboxes.0",
    "policies.agents",
    "policies.agents.credential_scope.app",
    "policies.agents.on_violation",
    "policies.agents.jail",
    "policies.agents.allow.0",
    "policies.agents.allow.1.mcp",
    "policies.agents.allow.2.graphql",
];

/// The key nothing in cordon.yaml is called.
const UNKNOWN: &str = "surplus_key";

/// `cordon check --config` on `text` in `dir`, with the secret the configuration reads from the environment:
/// (exit code, stderr).
fn check(dir: &Path, text: &str) -> (i32, String) {
    let path = dir.join("cordon.yaml");
    std::fs::write(&path, text).unwrap();
    let out = Command::new(BIN)
        .args(["check", "--config"])
        .arg(&path)
        .env_remove("CORDON_CONFIG")
        .env_remove("CORDON_LOG_FORMAT")
        .env("CORDON_SCHEMA_TEST_SECRET", "not-a-real-secret")
        .timed_output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A key cordon does not know is refused wherever it is written: by the schema (an editor flags it, at that
/// place) and by `cordon check` (exit 2, naming the key), starting from a configuration both take.
#[test]
fn an_unknown_key_is_refused_by_the_schema_as_by_check() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (cert, key) = test_ca("schema test").pem_pair(&["localhost"]);
    std::fs::write(d.join("cert.pem"), cert).unwrap();
    std::fs::write(d.join("key.pem"), key).unwrap();
    std::fs::write(d.join("secret"), "a-secret-of-32-bytes-or-more-000000").unwrap();
    let full = FULL.replace("DIR", d.to_str().unwrap());
    let config = d.join("cordon.yaml");
    std::fs::write(&config, &full).unwrap();
    let mut set = Command::new(BIN)
        .args(["vault", "set", "stored", "--config"])
        .arg(&config)
        .env("CORDON_SCHEMA_TEST_SECRET", "x")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut set.stdin.take().unwrap(), b"a stored value").unwrap();
    let out = set.timed_wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let base = json_of(&full).unwrap();
    let v = validator(&schema());
    assert_eq!(
        errors(&v, &base),
        Vec::<String>::new(),
        "the schema refuses the full configuration"
    );
    let (code, err) = check(d, &full);
    assert_eq!(code, 0, "cordon check refuses the full configuration: {err}");

    let mut failures = Vec::new();
    for place in PLACES {
        let mut value = base.clone();
        let mut at = &mut value;
        for step in place.split('.').filter(|s| !s.is_empty()) {
            at = match step.parse::<usize>() {
                Ok(i) => &mut at[i],
                Err(_) => &mut at[step],
            };
        }
        let map = at
            .as_object_mut()
            .unwrap_or_else(|| panic!("{place} is not a mapping in FULL"));
        map.insert(UNKNOWN.into(), Value::from(1));
        let found = errors(&v, &value);
        let pointer = format!("/{}", place.replace('.', "/"));
        let pointer = pointer.trim_end_matches('/');
        if !found
            .iter()
            .any(|e| e.starts_with(&format!("at {pointer}:")) && e.contains(UNKNOWN))
        {
            failures.push(format!(
                "{place:?}: the schema does not refuse {UNKNOWN} there: {found:?}"
            ));
        }
        let (code, err) = check(d, &serde_yaml_ng::to_string(&value).unwrap());
        let named = format!("unknown field `{UNKNOWN}`");
        let path = place
            .split('.')
            .fold(String::new(), |path, step| match step.parse::<usize>() {
                Ok(i) => format!("{path}[{i}]"),
                Err(_) if path.is_empty() => step.to_string(),
                Err(_) => format!("{path}.{step}"),
            });
        let named = if path.is_empty() {
            named
        } else {
            format!("{path}: {named}")
        };
        if code != 2 || !err.contains(&named) {
            failures.push(format!("{place:?}: cordon check gave {code}: {err}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
