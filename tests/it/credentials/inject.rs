//! Credentials end to end through the `cordon` binary (its environment holds the secrets; the client's
//! never does): header injection, placeholders, and refusals of placeholders out of place.

use crate::rigs::client::*;
use crate::rigs::process::Signal;
use crate::rigs::process::curl;
use crate::rigs::tls::*;
use crate::rigs::upstreams::*;
use crate::rigs::wait::{TimedChild, Within};
use base64::Engine;
use std::process::{Command, Stdio};

const BEARER: &str = "s3cr3t-bearer-5c1e0b2f";

const PH_SECRET: &str = "s3cr3t-apikey-91d7aa40";

const OTHER_SECRET: &str = "s3cr3t-other-7f00c2d1";

const VAULT_SECRET: &str = "s3cr3t-vaulted-0b9e44c3";

struct Cred {
    up: Upstream,
    up2: Upstream,
    plain: Upstream,
    dir: tempfile::TempDir,
    port: u16,
    child: Option<std::process::Child>,
    _config: tempfile::NamedTempFile,
    config_path: String,
}

impl Drop for Cred {
    /// A test that fails before it stops cordon leaves no cordon running.
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = crate::rigs::wait::TimedChild::timed_wait(&mut c);
        }
    }
}

impl Cred {
    fn proxy(&self, who: &str) -> String {
        format!("http://{who}@127.0.0.1:{}", self.port)
    }
    fn ca(&self, sandbox: &str) -> std::path::PathBuf {
        let out = Command::new(env!("CARGO_BIN_EXE_cordon"))
            .args(["ca", "export", "--config", &self.config_path, "--sandbox", sandbox])
            .timed_output()
            .unwrap();
        let path = self.dir.path().join(format!("{sandbox}-ca.pem"));
        std::fs::write(&path, &out.stdout).unwrap();
        path
    }
    fn placeholder(&self, sandbox: &str, var: &str) -> String {
        let out = Command::new(env!("CARGO_BIN_EXE_cordon"))
            .args(["placeholders", "--config", &self.config_path, "--sandbox", sandbox])
            .timed_output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(!text.contains(PH_SECRET) && !text.contains(BEARER));
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{var}=")))
            .unwrap_or_else(|| panic!("no {var} in {text}"))
            .to_string()
    }
    /// A placeholder computed as cordon does (the key file beside the vault, over the incarnation of a file
    /// sandbox: `id@user`), for credentials whose placeholders are not handed out (header credentials).
    fn placeholder_of(&self, (sandbox, user): (&str, &str), credential: &str) -> String {
        let key = self.dir.path().join("vault/placeholder.key");
        cordon::placeholder::Placeholders::load(&key).unwrap().value(
            &cordon::names::Incarnation::declared(&cordon::names::SandboxId::parse(sandbox).unwrap(), user),
            &credential.into(),
        )
    }

    fn url(&self, host: &str, path: &str) -> String {
        format!("https://{host}:{}{path}", self.up.addr.port())
    }
    /// Stop cordon and return everything it wrote (audit and logs).
    fn output(&mut self) -> String {
        let child = self.child.take().unwrap();
        crate::rigs::process::signal(child.id(), Signal::SIGTERM).unwrap();
        let out = child.timed_wait_with_output().unwrap();
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }
}

async fn start() -> Cred {
    let upstream_ca = test_ca("upstream test CA");
    let up = https_upstream(
        "127.0.0.2",
        upstream_ca.server_config(&["allowed.test", "api.allowed.test", "pinned.test"]),
    )
    .await;
    let up2 = https_upstream("127.0.0.2", upstream_ca.server_config(&["allowed.test"])).await;
    let plain = upstream("127.0.0.3").await;
    let dir = tempfile::tempdir().unwrap();
    let roots = dir.path().join("upstream-ca.pem");
    std::fs::write(&roots, &upstream_ca.pem).unwrap();
    let port = crate::rigs::ports::free_port();
    let (u, p, o) = (up.addr.port(), plain.addr.port(), up2.addr.port());
    let yaml = format!(
        r#"
listen: {{ proxy: 127.0.0.1:{port} }}
network:
  allow_cidrs: ["127.0.0.0/8"]
  hosts: {{ allowed.test: 127.0.0.2, api.allowed.test: 127.0.0.2, plain.test: 127.0.0.3, pinned.test: 127.0.0.2 }}
ca: {{ dir: {cas} }}
upstream: {{ extra_roots: [{roots}] }}
vault: {{ file: {{ path: {vault} }} }}
credentials:
  bearer:
    source: {{ env: CRED_BEARER }}
    bind: {{ hosts: [allowed.test, pinned.test], ports: [{u}] }}
    inject: {{ header: Authorization, value: "Bearer {{secret}}" }}
    mask_echo: true
  apikey:
    source: {{ env: CRED_APIKEY }}
    bind: {{ hosts: [api.allowed.test], ports: [{u}] }}
    inject: {{ placeholder: {{ query: true, body: true }} }}
  vaulted:
    source: {{ vault: vaulted-secret }}
    bind: {{ hosts: [allowed.test], ports: [{u}] }}
    inject: {{ header: X-Vaulted, value: "{{secret}}" }}
  other:
    source: {{ env: CRED_OTHER }}
    bind: {{ hosts: [plain.test], ports: [{p}] }}
    inject: {{ placeholder: {{}} }}
sandboxes:
  - {{ id: sb1, user: alice, token_sha256: {h1}, policy: web }}
  - {{ id: sb2, user: bob, token_sha256: {h2}, policy: web }}
policies:
  web:
    credentials: [bearer, apikey, other, vaulted]
    allow:
      - host: allowed.test
        ports: [{u}, {o}]
      - host: pinned.test
        ports: [{u}]
        tls: tunnel
      - host: api.allowed.test
        ports: [{u}]
      - host: plain.test
        ports: [{p}]
"#,
        cas = dir.path().join("cas").display(),
        roots = roots.display(),
        vault = dir.path().join("vault/cordon.vault").display(),
        h1 = hash("tok1"),
        h2 = hash("tok2"),
    );
    let mut f = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
    std::io::Write::write_all(&mut f, yaml.as_bytes()).unwrap();
    let config_path = f.path().to_str().unwrap().to_string();
    vault_cli(&config_path, &["set", "vaulted-secret"], VAULT_SECRET);
    vault_cli(&config_path, &["set", "scratch"], "to-be-removed");
    let listed = vault_cli(&config_path, &["list"], "");
    assert_eq!(listed, "scratch\nvaulted-secret\n", "names only");
    vault_cli(&config_path, &["rm", "scratch"], "");
    assert_eq!(vault_cli(&config_path, &["list"], ""), "vaulted-secret\n");
    let env = [
        ("CRED_BEARER", BEARER),
        ("CRED_APIKEY", PH_SECRET),
        ("CRED_OTHER", OTHER_SECRET),
        ("CORDON_LOG", "debug"),
    ];
    let child = crate::rigs::process::spawn_cordon(f.path(), port, &env).await;
    Cred {
        up,
        up2,
        plain,
        dir,
        port,
        child: Some(child),
        _config: f,
        config_path,
    }
}

/// `cordon vault ...` with `stdin`; returns stdout.
fn vault_cli(config: &str, args: &[&str], stdin: &str) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cordon"))
        .arg("vault")
        .args(args)
        .args(["--config", config])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), stdin.as_bytes()).unwrap();
    let out = child.timed_wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!stdout.contains(VAULT_SECRET));
    stdout
}

fn run(c: &mut Command) -> (String, String) {
    let o = c.timed_output().unwrap();
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn credentials_are_applied_only_where_bound_and_never_leak() {
    let mut c = start().await;
    let ca1 = c.ca("sb1");
    let sb1 = c.proxy("sb1:tok1");
    let with = |args: &[&str]| {
        let mut cmd = curl();
        cmd.args(["-x", &sb1]).arg("--cacert").arg(&ca1).args(args);
        run(&mut cmd)
    };

    // Header injection over intercepted HTTPS, replacing what the sandbox sent.
    let (body, err) = with(&["-H", "Authorization: Bearer sandbox-own", &c.url("allowed.test", "/x")]);
    assert_eq!(body, "hello from upstream\n", "{err}");
    let seen = c.up.seen();
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {BEARER}").as_str())
    );
    assert_eq!(
        seen[0].headers.iter().filter(|(k, _)| k == "authorization").count(),
        1,
        "replaced, not merged"
    );

    // An upstream that echoes the credential back: the sandbox sees its placeholder, never the secret.
    let (echoed, err) = with(&["-D", "-", &c.url("allowed.test", "/echo")]);
    let bearer_ph = c.placeholder_of(("sb1", "alice"), "bearer");
    assert!(echoed.contains(&format!("Bearer {bearer_ph}")), "{echoed} {err}");
    assert!(
        echoed
            .to_ascii_lowercase()
            .contains(&format!("x-echo: bearer {bearer_ph}").to_ascii_lowercase()),
        "{echoed}"
    );
    assert!(!echoed.contains(BEARER));

    // The same host on another port, and a `tls: tunnel` rule to a bound host: nothing is injected.
    let (body, err) = with(&[&format!("https://allowed.test:{}/other-port", c.up2.addr.port())]);
    assert_eq!(body, "hello from upstream\n", "{err}");
    assert!(
        c.up2.seen()[0].header("authorization").is_none(),
        "not bound to this port"
    );
    let upstream_ca = c.dir.path().join("upstream-ca.pem");
    let mut cmd = curl();
    cmd.args(["-x", &sb1])
        .arg("--cacert")
        .arg(&upstream_ca)
        .arg(c.url("pinned.test", "/tunnel"));
    assert_eq!(run(&mut cmd).0, "hello from upstream\n");
    let seen = c.up.seen();
    let tunnelled = seen.iter().find(|s| s.uri.ends_with("/tunnel")).unwrap();
    assert!(
        tunnelled.header("authorization").is_none(),
        "a tunnel is never injected into"
    );

    // A placeholder in a header and in the query, to the host it is bound to.
    let ph = c.placeholder("sb1", "CORDON_PLACEHOLDER_APIKEY");
    let (body, err) = with(&[
        "-H",
        &format!("X-Api-Key: {ph}"),
        &c.url("api.allowed.test", &format!("/v1?key={ph}")),
    ]);
    assert_eq!(body, "hello from upstream\n", "{err}");
    let seen = c.up.seen();
    let last = seen.last().unwrap();
    assert_eq!(last.header("x-api-key"), Some(PH_SECRET));
    assert!(last.uri.contains(&format!("key={PH_SECRET}")), "{}", last.uri);
    assert!(
        last.header("authorization").is_none(),
        "the bearer credential is not bound to api.allowed.test"
    );

    // In a body (read up to 1 MiB), swapped with Content-Length fixed; larger bodies to it: 413.
    let (body, err) = with(&[
        "--data",
        &format!("{{\"key\":\"{ph}\"}}"),
        &c.url("api.allowed.test", "/v1/body"),
    ]);
    assert_eq!(body, "hello from upstream\n", "{err}");
    let seen = c.up.seen();
    let last = seen.last().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&last.body),
        format!("{{\"key\":\"{PH_SECRET}\"}}")
    );
    let big = c.dir.path().join("big.bin");
    std::fs::write(&big, vec![b'a'; 2 * 1024 * 1024]).unwrap();
    let big_arg = format!("@{}", big.display());
    let (code, big_err) = with(&[
        "--http1.1",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "--data-binary",
        &big_arg,
        &c.url("api.allowed.test", "/v1/big"),
    ]);
    assert_eq!(code, "413", "{big_err}");

    // Out of place: to an unbound host in a header, in Basic auth, in the query, in the body.
    let code = |args: &[&str]| with(&[&["-o", "/dev/null", "-w", "%{http_code}"][..], args].concat()).0;
    let before = c.up.seen().len();
    assert_eq!(
        code(&["-H", &format!("X-Api-Key: {ph}"), &c.url("allowed.test", "/")]),
        "403"
    );
    assert_eq!(code(&["-u", &format!("user:{ph}"), &c.url("allowed.test", "/")]), "403");
    assert_eq!(code(&[&c.url("allowed.test", &format!("/?k={ph}"))]), "403");
    assert_eq!(
        code(&["--data", &format!("k={ph}"), &c.url("allowed.test", "/")]),
        "403"
    );
    // Another sandbox's placeholder, to the host it is bound to.
    let ph2 = c.placeholder("sb2", "CORDON_PLACEHOLDER_APIKEY");
    assert_ne!(ph, ph2);
    assert_eq!(
        code(&["-H", &format!("X-Api-Key: {ph2}"), &c.url("api.allowed.test", "/v1")]),
        "403"
    );
    assert_eq!(c.up.seen().len(), before, "nothing refused reached the upstream");

    // Cleartext: a placeholder bound to a plain-HTTP host is still never substituted, and refused.
    let other = c.placeholder("sb1", "CORDON_PLACEHOLDER_OTHER");
    let plain_url = format!("http://plain.test:{}/", c.plain.addr.port());
    let mut cmd = curl();
    cmd.args([
        "-x",
        &sb1,
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "-H",
        &format!("X-Key: {other}"),
        &plain_url,
    ]);
    assert_eq!(run(&mut cmd).0, "403");
    let mut cmd = curl();
    cmd.args(["-x", &sb1, &plain_url]);
    assert_eq!(run(&mut cmd).0, "hello from upstream\n");
    assert!(
        c.plain
            .seen()
            .iter()
            .all(|s| s.header("authorization").is_none() && s.header("x-key").is_none())
    );

    // Nothing cordon wrote holds a secret, in clear or base64.
    let logs = c.output();
    assert!(
        logs.contains("credential_exfiltration") && logs.contains("\"credentials\":[\"bearer\",\"vaulted\"]"),
        "{logs}"
    );
    let vault_file = std::fs::read(c.dir.path().join("vault/cordon.vault")).unwrap();
    assert!(
        !String::from_utf8_lossy(&vault_file).contains(VAULT_SECRET),
        "the vault file is encrypted"
    );
    for secret in [BEARER, PH_SECRET, OTHER_SECRET, VAULT_SECRET] {
        let b64 = base64::engine::general_purpose::STANDARD.encode(secret);
        assert!(
            !logs.contains(secret) && !logs.contains(&b64),
            "{secret} leaked into cordon's output"
        );
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("user:{secret}"));
        assert!(!logs.contains(&basic));
    }
}
