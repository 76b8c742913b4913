//! Which rule decides, through the binary (issue 34, items 1 and 2): for a host, the most specific matching rule
//! governs, a `tls: tunnel` rule never answers a request inside an interception, an own policy is held to what
//! its base decides, and a reload that changes a host's TLS mode closes what the old mode opened.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::rigs::client::{closed_within, hash};
use crate::rigs::control::admin_request;
use crate::rigs::ports::free_port;
use crate::rigs::process::Signal;
use crate::rigs::tls::{https_upstream, test_ca, tls_as};
use crate::rigs::upstreams::Upstream;
use crate::rigs::wait::{TimedChild, Within};

const SECRET: &str = "sk-rule-semantics-0123456789";

/// The base of the finding: rule 0 intercepts api.allowed.test for GET /v1/**, rule 1 tunnels every name under
/// allowed.test; a credential is bound to api.allowed.test.
fn rules(u: u16, www: &str) -> String {
    format!(
        "      - {{ host: api.allowed.test, ports: [{u}], methods: [GET], paths: [\"/v1/**\"] }}\n\
         {www}      - {{ host: \"*.allowed.test\", ports: [{u}], tls: tunnel }}\n"
    )
}

struct Rig {
    up: Upstream,
    dir: tempfile::TempDir,
    config: PathBuf,
    port: u16,
    admin: std::net::SocketAddr,
    token: String,
    child: Option<Child>,
    upstream_ca: PathBuf,
}

impl Rig {
    fn yaml(&self, www: &str) -> String {
        yaml(self.dir.path(), self.port, self.admin.port(), self.up.addr.port(), www)
    }

    fn proxy(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// `cordon ca export` for a declared sandbox, into a file.
    fn sandbox_ca(&self, id: &str) -> PathBuf {
        let out = Command::new(env!("CARGO_BIN_EXE_cordon"))
            .args(["ca", "export", "--sandbox", id, "--config"])
            .arg(&self.config)
            .timed_output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let path = self.dir.path().join(format!("{id}-ca.pem"));
        std::fs::write(&path, out.stdout).unwrap();
        path
    }

    /// curl through cordon as sb1, trusting `ca`: the status code.
    fn curl(&self, ca: &Path, args: &[&str]) -> String {
        let o = crate::rigs::process::curl()
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}"])
            .args(["-x", &format!("http://sb1:tok1@{}", self.proxy())])
            .arg("--cacert")
            .arg(ca)
            .args(args)
            .timed_output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn url(&self, host: &str, path: &str) -> String {
        format!("https://{host}:{}{path}", self.up.addr.port())
    }

    async fn admin(&self, method: &str, path: &str, body: &Value) -> (u16, Value) {
        let (status, _, text) = admin_request(self.admin, method, path, Some(&self.token), &body.to_string()).await;
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    fn reload(&self, www: &str) {
        std::fs::write(&self.config, self.yaml(www)).unwrap();
        let pid = self.child.as_ref().unwrap().id();
        assert!(crate::rigs::process::signal(pid, Signal::SIGHUP).is_ok());
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.timed_wait();
        }
    }
}

fn yaml(dir: &Path, port: u16, admin: u16, u: u16, www: &str) -> String {
    format!(
        r#"
listen: {{ proxy: 127.0.0.1:{port}, admin: 127.0.0.1:{admin} }}
network:
  allow_cidrs: ["127.0.0.0/8"]
  hosts: {{ api.allowed.test: 127.0.0.2, www.allowed.test: 127.0.0.2 }}
ca: {{ dir: {d}/cas }}
vault: {{ file: {{ path: {d}/vault/cordon.vault }} }}
upstream: {{ extra_roots: [{d}/upstream-ca.pem] }}
control:
  admin_token: {{ file: {d}/admin-token }}
  signing_key: {{ file: {d}/signing-key }}
  store: {d}/cordon.db
  proxy_url: http://127.0.0.1:{port}
  ca_file: {d}/sandbox-ca.pem
credentials:
  bearer:
    source: {{ env: RULES_BEARER }}
    bind: {{ hosts: [api.allowed.test], ports: [{u}] }}
    inject: {{ header: Authorization, value: "Bearer {{secret}}" }}
  ph:
    source: {{ env: RULES_BEARER }}
    bind: {{ hosts: [api.allowed.test], ports: [{u}] }}
    inject: {{ placeholder: {{}} }}
sandboxes:
  - {{ id: sb1, user: alice, token_sha256: {h}, policy: base }}
policies:
  base:
    credentials: [bearer, ph]
    allow:
{rules}"#,
        d = dir.display(),
        h = hash("tok1"),
        rules = rules(u, www),
    )
}

async fn start() -> Rig {
    let ca = test_ca("upstream test CA");
    let up = https_upstream("127.0.0.2", ca.server_config(&["api.allowed.test", "www.allowed.test"])).await;
    let dir = tempfile::tempdir().unwrap();
    let upstream_ca = dir.path().join("upstream-ca.pem");
    std::fs::write(&upstream_ca, &ca.pem).unwrap();
    let (port, admin) = (free_port(), free_port());
    let config = dir.path().join("cordon.yaml");
    std::fs::write(&config, yaml(dir.path(), port, admin, up.addr.port(), "")).unwrap();
    let child = crate::rigs::process::spawn_cordon(&config, port, &[("RULES_BEARER", SECRET)]).await;
    let token = crate::rigs::control::token(dir.path());
    Rig {
        up,
        config,
        port,
        admin: std::net::SocketAddr::from(([127, 0, 0, 1], admin)),
        token,
        child: Some(child),
        upstream_ca,
        dir,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tunnel_rule_never_answers_inside_an_interception_and_carries_no_credential() {
    let rig = start().await;
    let ca = rig.sandbox_ca("sb1");
    for http in ["--http1.1", "--http2"] {
        assert_eq!(
            rig.curl(&ca, &[http, &rig.url("api.allowed.test", "/v1/models")]),
            "200"
        );
        // What rule 0 refuses is refused, whatever rule 1 (a wildcard tunnel) would allow.
        for (method, path) in [
            ("DELETE", "/admin/keys"),
            ("GET", "/admin"),
            ("POST", "/v1/models"),
            ("PUT", "/v1/x"),
        ] {
            let code = rig.curl(&ca, &[http, "-X", method, &rig.url("api.allowed.test", path)]);
            assert_eq!(code, "403", "{http} {method} {path}");
        }
    }
    let seen = rig.up.seen();
    assert_eq!(seen.len(), 2, "only the two allowed GETs reached the upstream");
    assert!(
        seen.iter().all(|s| s.method == "GET" && s.uri.contains("/v1/models")),
        "{:?}",
        seen.iter().map(|s| (&s.method, &s.uri)).collect::<Vec<_>>()
    );
    assert!(
        seen.iter()
            .all(|s| s.header("authorization") == Some(&format!("Bearer {SECRET}") as &str))
    );
    // Another name under the wildcard is a blind tunnel: cordon's CA does not answer it, the upstream's does.
    assert_eq!(rig.curl(&ca, &[&rig.url("www.allowed.test", "/")]), "000");
    assert_eq!(rig.curl(&rig.upstream_ca, &[&rig.url("www.allowed.test", "/")]), "200");
    assert!(
        rig.up
            .seen()
            .iter()
            .all(|s| s.header("authorization").is_none() || s.uri.contains("/v1/"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_own_policy_is_held_to_what_its_base_decides_for_every_host_it_covers() {
    let rig = start().await;
    let u = rig.up.addr.port();
    let refused = [
        // The base intercepts api.allowed.test: a blind tunnel to it, named or under a wildcard, exceeds it.
        json!({"host": "api.allowed.test", "ports": [u], "tls": "tunnel"}),
        json!({"host": "*.allowed.test", "ports": [u], "tls": "tunnel"}),
        // Inside api.allowed.test only rule 0 counts, not the wider wildcard.
        json!({"host": "api.allowed.test", "ports": [u], "methods": ["DELETE"], "paths": ["/admin/**"]}),
        // The base tunnels www.allowed.test: an intercepted own rule would inject and read where it does not.
        json!({"host": "www.allowed.test", "ports": [u]}),
    ];
    for rule in &refused {
        let policy = json!({"extends": "base", "allow": [rule]});
        let (status, v) = rig
            .admin("POST", "/v1/sandboxes", &json!({"user": "u1", "policy": policy}))
            .await;
        assert_eq!(status, 422, "{rule}: {v}");
        assert_eq!(v["error"]["code"], "exceeds_base", "{v}");
        assert!(v.to_string().contains("policy.allow[0]"), "{v}");
    }
    // Within what the base decides: accepted.
    let fine = json!({"extends": "base", "allow": [
        {"host": "www.allowed.test", "ports": [u], "tls": "tunnel"},
        {"host": "api.allowed.test", "ports": [u], "methods": ["GET"], "paths": ["/v1/models"]},
    ]});
    let (status, v) = rig
        .admin("POST", "/v1/sandboxes", &json!({"user": "u1", "policy": fine}))
        .await;
    assert_eq!(status, 201, "{v}");
    // And a PATCH is judged the same way, leaving the sandbox's policy as it was.
    let id = v["id"].as_str().unwrap();
    let (status, v) = rig
        .admin(
            "PATCH",
            &format!("/v1/sandboxes/{id}"),
            &json!({"policy": {"extends": "base", "allow": [refused[0]]}}),
        )
        .await;
    assert_eq!(status, 422, "{v}");
    let (_, shown) = rig.admin("GET", &format!("/v1/sandboxes/{id}"), &Value::Null).await;
    assert_eq!(shown["inline_policy"], fine, "{shown}");
}

type Tls = tokio_rustls::client::TlsStream<tokio::net::TcpStream>;

/// A blind tunnel to www.allowed.test as `who`, trusting the upstream's CA (the real certificate shows).
async fn blind_as(rig: &Rig, who: (&str, &str)) -> Tls {
    let target = format!("www.allowed.test:{}", rig.up.addr.port());
    tls_as(
        rig.proxy(),
        who,
        &target,
        "www.allowed.test",
        &rig.upstream_ca,
        b"http/1.1",
    )
    .await
    .unwrap()
}

/// A blind tunnel to www.allowed.test as sb1 with one exchange on it.
async fn blind_tunnel(rig: &Rig) -> Tls {
    let target = format!("www.allowed.test:{}", rig.up.addr.port());
    let mut tls = blind_as(rig, ("sb1", "tok1")).await;
    tls.write_all(format!("GET /public/x HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut buf = vec![0u8; 4096];
    let n = crate::rigs::wait::within(
        &format!("the answer from {target} through the blind tunnel"),
        std::time::Duration::from_secs(20),
        tls.read(&mut buf),
    )
    .await
    .unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    tls
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reload_that_changes_a_hosts_tls_mode_closes_the_tunnels_the_old_mode_opened() {
    let rig = start().await;
    let mut blind = blind_tunnel(&rig).await;
    let mut other = blind_tunnel(&rig).await;
    // www.allowed.test becomes intercepted, GET /public/** only; the wildcard still tunnels the rest.
    let u = rig.up.addr.port();
    rig.reload(&format!(
        "      - {{ host: www.allowed.test, ports: [{u}], methods: [GET], paths: [\"/public/**\"] }}\n"
    ));
    assert!(
        closed_within(&mut blind, Duration::from_secs(3)).await,
        "a blind tunnel outlived the rule that opened it"
    );
    assert!(closed_within(&mut other, Duration::from_secs(1)).await);
    // What it would have carried is now judged inside the interception.
    let ca = rig.sandbox_ca("sb1");
    assert_eq!(rig.curl(&ca, &[&rig.url("www.allowed.test", "/public/x")]), "200");
    assert_eq!(
        rig.curl(&ca, &["-X", "DELETE", &rig.url("www.allowed.test", "/private/x")]),
        "403"
    );
    assert!(rig.up.seen().iter().all(|s| s.method != "DELETE"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reload_that_changes_the_mode_under_an_own_policy_closes_its_tunnels_too() {
    let rig = start().await;
    let u = rig.up.addr.port();
    let own = json!({"extends": "base", "allow": [{"host": "www.allowed.test", "ports": [u], "tls": "tunnel"}]});
    let (status, v) = rig
        .admin("POST", "/v1/sandboxes", &json!({"user": "u1", "policy": own}))
        .await;
    assert_eq!(status, 201, "{v}");
    let (id, cred) = (v["id"].as_str().unwrap(), v["credential"].as_str().unwrap());
    let mut tls = blind_as(&rig, (id, cred)).await;
    rig.reload(&format!(
        "      - {{ host: www.allowed.test, ports: [{u}], methods: [GET], paths: [\"/public/**\"] }}\n"
    ));
    assert!(
        closed_within(&mut tls, Duration::from_secs(3)).await,
        "a run-time sandbox's blind tunnel outlived its base's mode"
    );
}

#[test]
fn check_warns_where_the_most_specific_rule_changes_the_mode() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("cordon.yaml");
    std::fs::write(dir.path().join("upstream-ca.pem"), test_ca("upstream test CA").pem).unwrap();
    std::fs::write(
        &config,
        yaml(
            dir.path(),
            3128,
            9090,
            443,
            "      - { host: api.allowed.test, tls: tunnel }\n",
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cordon"))
        .args(["check", "--config"])
        .arg(&config)
        .env("RULES_BEARER", SECRET)
        .timed_output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // The wildcard tunnel does not apply to api.allowed.test, which rule 0 intercepts.
    assert!(
        err.contains("policies.base.allow[2]: for api.allowed.test, allow[0] governs"),
        "{err}"
    );
    // The second rule for api.allowed.test, in the other mode, never opens a blind tunnel on port 443.
    assert!(
        err.contains("policies.base.allow[1]: allow[0] names the same destination first"),
        "{err}"
    );
}

/// CONNECT to `authority` as sb1: the status cordon answers.
async fn connect_status(rig: &Rig, authority: &str) -> u16 {
    let mut s = tokio::net::TcpStream::connect(rig.proxy()).await.unwrap();
    let raw = format!(
        "CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n{}\r\n",
        crate::rigs::client::auth("sb1", "tok1")
    );
    s.write_all(raw.as_bytes()).await.unwrap();
    crate::rigs::client::read_head(&mut s).await.status
}

#[tokio::test(flavor = "multi_thread")]
async fn a_placeholder_or_secret_as_a_host_name_is_refused_before_any_lookup() {
    let mut rig = start().await;
    let u = rig.up.addr.port();
    let key = rig.dir.path().join("vault/placeholder.key");
    let ph = cordon::placeholder::Placeholders::load(&key).unwrap().value(
        &cordon::names::Incarnation::declared(&cordon::names::SandboxId::parse("sb1").unwrap(), "alice"),
        &"ph".into(),
    );
    let (head, tail) = ph.split_at(20);
    let names = [
        (format!("{ph}.allowed.test"), "credential_exfiltration"),
        (format!("x.{ph}.allowed.test"), "credential_exfiltration"),
        // Split over two labels.
        (format!("{head}.{tail}.allowed.test"), "credential_exfiltration"),
        // Written in capitals: the name is lowered before anything, and still refused.
        (format!("{}.allowed.test", ph.to_uppercase()), "credential_exfiltration"),
        // The real secret as a label.
        (format!("{SECRET}.allowed.test"), "secret_exfiltration"),
    ];
    for (name, _) in &names {
        // Under the *.allowed.test tunnel rule: without the check the name would go to the resolver.
        assert_eq!(
            connect_status(&rig, &format!("{name}:{u}")).await,
            403,
            "CONNECT {name}"
        );
        let o = crate::rigs::process::curl()
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}"])
            .args(["-x", &format!("http://sb1:tok1@{}", rig.proxy())])
            .arg(format!("http://{name}:{u}/"))
            .timed_output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&o.stdout), "403", "GET http://{name}");
    }
    assert_eq!(rig.up.accepted(), 0, "nothing reached the upstream");
    // A name without one still goes on (to the resolver, which knows no such name: 502).
    assert_eq!(connect_status(&rig, &format!("other.allowed.test:{u}")).await, 502);
    let mut child = rig.child.take().unwrap_or_else(|| unreachable!());
    let _ = crate::rigs::process::signal(child.id(), Signal::SIGTERM);
    let _ = child.timed_wait();
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut out).unwrap();
    for reason in ["credential_exfiltration", "secret_exfiltration"] {
        let refused = out
            .lines()
            .filter(|l| l.contains("\"host\":\"[redacted]\"") && l.contains(reason))
            .count();
        let want = names.iter().filter(|(_, r)| *r == reason).count() * 2;
        assert_eq!(refused, want, "{reason} records with the host redacted:\n{out}");
    }
    assert!(
        !out.contains(&ph) && !out.contains(tail),
        "the audit repeats the placeholder"
    );
    assert!(!out.contains(SECRET), "the audit repeats the secret");
}
