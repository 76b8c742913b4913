//! Refusals an agent can act on (issue 56, item 1), through the binary: Python `requests` and curl meet refusals
//! of each family (a host, a method, a path no rule allows, a metadata address, a private address, a malformed
//! host, no proxy credentials, a credential source that fails, an upstream that is not there) over explicit
//! HTTP, inside an intercepted tunnel and on CONNECT, and read the `cordon.refusal/1` facts: JSON or text as
//! their Accept says, the same facts in `x-cordon-*` headers on a refused CONNECT, and never a credential, a
//! placeholder, the proxy token or the query string.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use serde_json::Value;

use crate::rigs::client::hash;
use crate::rigs::curl::{Curled, run};
use crate::rigs::ports::free_port;
use crate::rigs::process::{BIN, curl, spawn_cordon};
use crate::rigs::tls::{https_upstream, test_ca};
use crate::rigs::upstreams::{Upstream, upstream};
use crate::rigs::wait::{TimedChild, Within};

/// The sandbox's proxy token: no refusal may echo it.
const TOKEN: &str = "tok-refusals-7c1e0f3a9b";
/// A secret in a query string: no refusal may echo it.
const QUERY_SECRET: &str = "qsecret-55aa31f0";

struct Rig {
    _dir: tempfile::TempDir,
    _up: Upstream,
    _tls_up: Upstream,
    child: Option<Child>,
    config: PathBuf,
    port: u16,
    /// The plain HTTP upstream's port, and the HTTPS one's.
    u: u16,
    hu: u16,
    /// A port nothing listens on, which a rule allows.
    dead: u16,
    ca: PathBuf,
}

impl Drop for Rig {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.timed_wait();
        }
    }
}

async fn rig() -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let upstream_ca = test_ca("refusals upstream CA");
    let tls_up = https_upstream("127.0.0.2", upstream_ca.server_config(&["allowed.test", "cred.test"])).await;
    std::fs::write(d.join("upstream-ca.pem"), &upstream_ca.pem).unwrap();
    let up = upstream("127.0.0.2").await;
    let (port, u, hu, dead) = (free_port(), up.addr.port(), tls_up.addr.port(), free_port());
    // The token endpoint of `broken` is a port nothing listens on: its source fails.
    let token_port = free_port();
    std::fs::write(d.join("client-secret"), "client-secret-value").unwrap();
    let yaml = format!(
        r#"
listen: {{ proxy: 127.0.0.1:{port} }}
network:
  allow_cidrs: ["127.0.0.0/8"]
  hosts: {{ allowed.test: 127.0.0.2, unlisted.test: 127.0.0.2, cred.test: 127.0.0.2, meta.test: 169.254.169.254, private.test: 10.0.0.1 }}
ca: {{ dir: {d}/cas }}
upstream: {{ extra_roots: [{d}/upstream-ca.pem] }}
vault: {{ file: {{ path: {d}/vault/cordon.vault }} }}
credentials:
  broken:
    source:
      oauth2: {{ token_url: "http://127.0.0.1:{token_port}/token", client_id: c, client_secret: {{ file: {d}/client-secret }} }}
    bind: {{ hosts: [cred.test], ports: [{hu}] }}
    inject: {{ header: Authorization, value: "Bearer {{secret}}" }}
  swapped:
    source: {{ file: {d}/client-secret }}
    bind: {{ hosts: [allowed.test], ports: [{hu}] }}
    inject: {{ placeholder: {{ query: true }} }}
sandboxes:
  - {{ id: sb1, user: alice, token_sha256: {h}, policy: web }}
policies:
  web:
    credentials: [broken, swapped]
    allow:
      - {{ host: allowed.test, ports: [{u}, {hu}, {dead}], methods: [GET], paths: ["/v1/**"] }}
      - {{ host: cred.test, ports: [{hu}] }}
      - {{ host: meta.test, ports: [{u}] }}
      - {{ host: private.test, ports: [{u}] }}
"#,
        d = d.display(),
        h = hash(TOKEN),
    );
    let config = d.join("cordon.yaml");
    std::fs::write(&config, yaml).unwrap();
    let child = spawn_cordon(&config, port, &[]).await;
    let out = Command::new(BIN)
        .args(["ca", "export", "--sandbox", "sb1", "--config"])
        .arg(&config)
        .timed_output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ca = d.join("sb1-ca.pem");
    std::fs::write(&ca, out.stdout).unwrap();
    Rig {
        _dir: dir,
        _up: up,
        _tls_up: tls_up,
        child: Some(child),
        config,
        port,
        u,
        hu,
        dead,
        ca,
    }
}

impl Rig {
    fn proxy(&self) -> String {
        format!("http://sb1:{TOKEN}@127.0.0.1:{}", self.port)
    }

    /// The sandbox's placeholder of `swapped`, as `cordon placeholders` prints it.
    fn placeholder(&self) -> String {
        let out = Command::new(BIN)
            .args(["placeholders", "--sandbox", "sb1", "--config"])
            .arg(&self.config)
            .timed_output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let at = text
            .find("cordon-ph-")
            .unwrap_or_else(|| panic!("no placeholder in {text}"));
        text[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect()
    }

    /// curl through cordon as sb1 (curl's own `Accept: */*` unless `args` says otherwise).
    fn curl(&self, args: &[&str]) -> Curled {
        let mut c = curl();
        c.args(["-s", "-x", &self.proxy()])
            .arg("--cacert")
            .arg(&self.ca)
            .args(args);
        run(c)
    }
}

/// What no refusal body or header may carry.
fn assert_clean(what: &str, text: &str, placeholder: &str) {
    for secret in [TOKEN, QUERY_SECRET, placeholder, "client-secret-value", "cordon-ph-"] {
        assert!(!text.contains(secret), "{what} carries {secret:?}: {text}");
    }
}

/// Python `requests` through cordon: each case is `[method, url, accept or null]`; for each, the status, the
/// headers (lower-case names) and the body.
fn python(rig: &Rig, cases: &Value) -> Vec<Value> {
    let script = r#"
import json, sys, requests
proxy, ca, cases = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
out = []
for method, url, accept in cases:
    s = requests.Session()
    s.trust_env = False
    headers = {"Accept": accept}  # None: requests sends no Accept at all
    r = s.request(method, url, headers=headers, proxies={"http": proxy, "https": proxy}, verify=ca, timeout=20)
    out.append({"status": r.status_code, "headers": {k.lower(): v for k, v in r.headers.items()}, "body": r.text})
print(json.dumps(out))
"#;
    let out = Command::new("python3")
        .args(["-c", script, &rig.proxy()])
        .arg(&rig.ca)
        .arg(cases.to_string())
        .timed_output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The JSON body of a response, checked against its headers and the schema's fields.
fn refusal(got: &Value, status: u16, reason: &str, whose: &str, ask: bool) -> Value {
    let body = got["body"].as_str().unwrap();
    assert_eq!(got["status"], status, "{got}");
    assert_eq!(got["headers"]["x-cordon-reason"], reason, "{got}");
    assert_eq!(
        got["headers"]["content-type"], "application/vnd.cordon.refusal+json",
        "{got}"
    );
    assert_eq!(got["headers"]["x-cordon-ask"], if ask { "yes" } else { "no" }, "{got}");
    assert_eq!(got["headers"]["x-cordon-whose"], whose, "{got}");
    let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(v["schema"], "cordon.refusal/1", "{v}");
    assert_eq!(v["reason"], reason, "{v}");
    assert_eq!(v["status"], status, "{v}");
    assert_eq!(v["whose"], whose, "{v}");
    assert_eq!(v["ask"], ask, "{v}");
    for key in ["message", "meaning", "hint", "no_way_around"] {
        assert!(v[key].as_str().is_some_and(|s| !s.is_empty()), "{key}: {v}");
    }
    v
}

/// Python `requests`, explicit HTTP and inside an intercepted tunnel: each family's refusal as JSON (the agent
/// asks for `application/json`), whose side it is on and whether asking can help, what was refused without its query.
#[tokio::test(flavor = "multi_thread")]
async fn python_requests_reads_each_familys_refusal() {
    let rig = rig().await;
    let ph = rig.placeholder();
    let (u, hu, dead) = (rig.u, rig.hu, rig.dead);
    let cases = serde_json::json!([
        [
            "GET",
            format!("http://unlisted.test:{u}/x?token={QUERY_SECRET}"),
            "application/json"
        ],
        ["DELETE", format!("http://allowed.test:{u}/v1/a"), "application/json"],
        [
            "GET",
            format!("http://allowed.test:{u}/v2/a?k={QUERY_SECRET}"),
            "application/json"
        ],
        [
            "GET",
            format!("http://meta.test:{u}/latest/meta-data/"),
            "application/json"
        ],
        ["GET", format!("http://private.test:{u}/"), "application/json"],
        // Sent, then failed: the Accept still decides the body.
        ["GET", format!("http://allowed.test:{dead}/v1/a"), "application/json"],
        // Inside an intercepted tunnel.
        [
            "GET",
            format!("https://allowed.test:{hu}/v2/b?k={QUERY_SECRET}"),
            "application/json"
        ],
        ["POST", format!("https://allowed.test:{hu}/v1/b"), "application/json"],
        // A credential source that fails is cordon's trouble, never "your key is bad".
        ["GET", format!("https://cred.test:{hu}/v1/c"), "application/json"],
        // A placeholder in the path of a refused request is not echoed.
        ["GET", format!("http://unlisted.test:{u}/k/{ph}"), "application/json"],
    ]);
    let got = python(&rig, &cases);
    for g in &got {
        assert_clean("a refusal", &g.to_string(), &ph);
    }

    let v = refusal(&got[0], 403, "no_rule", "policy", true);
    assert_eq!(
        v["refused"],
        serde_json::json!({"method": "GET", "host": "unlisted.test", "port": u, "path": "/x"})
    );
    assert_eq!(
        got[0]["headers"]["x-cordon-refused"],
        format!("GET unlisted.test:{u} /x")
    );
    let v = refusal(&got[1], 403, "method_not_allowed", "policy", true);
    assert_eq!(v["refused"]["method"], "DELETE");
    let v = refusal(&got[2], 403, "path_not_allowed", "policy", true);
    assert_eq!(v["refused"]["path"], "/v2/a");
    assert!(v["hint"].as_str().unwrap().contains("ask a person"), "{v}");
    let v = refusal(&got[3], 403, "metadata_address", "policy", false);
    assert_eq!(v["refused"]["host"], "meta.test");
    refusal(&got[4], 403, "special_range", "policy", false);
    let v = refusal(&got[5], 502, "connect_failed", "upstream", false);
    assert_eq!(v["refused"]["port"], dead);
    let v = refusal(&got[6], 403, "path_not_allowed", "policy", true);
    assert_eq!(v["refused"]["path"], "/v2/b");
    assert_eq!(v["refused"]["port"], hu);
    refusal(&got[7], 403, "method_not_allowed", "policy", true);
    let v = refusal(&got[8], 503, "credential_unavailable", "cordon", false);
    let hint = v["hint"].as_str().unwrap();
    assert!(hint.contains("not the problem") && !hint.contains("rotate"), "{v}");
    let v = refusal(&got[9], 403, "no_rule", "policy", true);
    assert_eq!(v["refused"]["path"], "[withheld]");
}

/// JSON or text as Accept says, with q-values: `application/json` takes JSON, `*/*` text first; `application/json;q=0`,
/// `text/plain` and no Accept at all get the short text, which says the same facts; the headers are there
/// either way.
#[tokio::test(flavor = "multi_thread")]
async fn the_body_is_json_or_text_as_accept_says() {
    let rig = rig().await;
    let url = format!("http://unlisted.test:{}/x?t={QUERY_SECRET}", rig.u);
    let cases = [
        // curl's own `Accept: */*`: text first.
        (vec![], false),
        (vec!["-H", "Accept: */*"], false),
        (vec!["-H", "Accept: application/json"], true),
        (vec!["-H", "Accept: text/html, application/json;q=0.9"], true),
        (vec!["-H", "Accept: application/json;q=0"], false),
        (vec!["-H", "Accept: application/json;q=0, */*;q=0.5"], false),
        (vec!["-H", "Accept: text/plain"], false),
        // curl's way of sending no Accept.
        (vec!["-H", "Accept:"], false),
    ];
    for (args, json) in &cases {
        let mut a: Vec<&str> = args.clone();
        a.push(&url);
        let got = rig.curl(&a);
        assert_eq!(got.status, 403, "{got}");
        assert_eq!(got.reason(), "no_rule", "{got}");
        assert_eq!(got.header("x-cordon-ask"), Some("yes"), "{got}");
        assert_clean("a refusal", &got.to_string(), "cordon-ph-");
        let text = got.text();
        if *json {
            assert_eq!(
                got.header("content-type"),
                Some("application/vnd.cordon.refusal+json"),
                "{args:?}: {got}"
            );
            let v: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["reason"], "no_rule");
        } else {
            assert!(
                got.header("content-type").unwrap().starts_with("text/plain"),
                "{args:?}: {got}"
            );
            assert!(text.starts_with("cordon: denied"), "{text}");
            assert!(text.contains("reason: no_rule (403, policy)"), "{text}");
            assert!(
                text.contains(&format!("refused: GET unlisted.test:{} /x\n", rig.u)),
                "{text}"
            );
            assert!(text.contains("ask a person: yes"), "{text}");
        }
    }
    // Python requests with no Accept at all: text.
    let got = python(&rig, &serde_json::json!([["GET", url, null]]));
    assert!(
        got[0]["body"].as_str().unwrap().starts_with("cordon: denied"),
        "{got:?}"
    );
}

/// A refused CONNECT: curl shows no body, so the facts travel in headers, header-safe; a malformed host and
/// missing credentials say whose they are too.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_connect_carries_the_facts_in_headers() {
    let rig = rig().await;
    let connect_header = |got: &Curled, name: &str| {
        got.connect_headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no {name}: {got}"))
    };
    for (url, code, reason, whose, ask) in [
        (
            format!("https://unlisted.test:{}/?t={QUERY_SECRET}", rig.hu),
            403,
            "no_rule",
            "policy",
            "yes",
        ),
        // A port no rule names for the host.
        (
            "https://allowed.test:1/".to_string(),
            403,
            "port_not_allowed",
            "policy",
            "yes",
        ),
    ] {
        let got = rig.curl(&[&url]);
        assert_eq!(got.connect, code, "{got}");
        assert_eq!(connect_header(&got, "x-cordon-reason"), reason);
        assert_eq!(connect_header(&got, "x-cordon-whose"), whose);
        assert_eq!(connect_header(&got, "x-cordon-ask"), ask);
        let refused = connect_header(&got, "x-cordon-refused");
        assert!(
            refused.starts_with("CONNECT ") && !refused.contains(QUERY_SECRET),
            "{refused}"
        );
        let hint = connect_header(&got, "x-cordon-hint");
        assert!(!hint.is_empty() && hint.len() <= 300 && hint.is_ascii(), "{hint}");
        assert_clean("a CONNECT refusal", &got.to_string(), "cordon-ph-");
    }
    // A malformed host: the request's fault, asking will not help.
    let got = rig.curl(&[
        "-H",
        "Accept: application/json",
        &format!("http://a..b.test:{}/", rig.u),
    ]);
    assert_eq!((got.status, got.reason()), (400, "empty_label"), "{got}");
    assert_eq!(got.header("x-cordon-whose"), Some("request"));
    assert_eq!(got.header("x-cordon-ask"), Some("no"));
    let v: Value = serde_json::from_str(&got.text()).unwrap();
    assert_eq!(
        (v["whose"].as_str(), v["ask"].as_bool()),
        (Some("request"), Some(false))
    );
    // No proxy credentials: 407, the request's side, and the hint says to use the proxy as set, not less.
    let mut c = curl();
    c.args([
        "-s",
        "-H",
        "Accept: application/json",
        "-x",
        &format!("http://127.0.0.1:{}", rig.port),
    ])
    .arg(format!("http://allowed.test:{}/v1/a", rig.u));
    let got = run(c);
    assert_eq!((got.status, got.reason()), (407, "auth_missing"), "{got}");
    let v: Value = serde_json::from_str(&got.text()).unwrap();
    assert_eq!(v["whose"], "request");
    assert!(v["hint"].as_str().unwrap().contains("through the proxy"), "{v}");
    assert_clean("a 407", &got.to_string(), "cordon-ph-");
}

/// The book's page documents every field the body carries, and each CONNECT header.
#[test]
fn the_book_documents_the_schema() {
    let page = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/refused.md")).unwrap();
    for field in [
        "schema",
        "reason",
        "status",
        "whose",
        "ask",
        "refused",
        "message",
        "meaning",
        "hint",
        "no_way_around",
        "retry_after",
        "x-cordon-reason",
        "x-cordon-whose",
        "x-cordon-ask",
        "x-cordon-refused",
        "x-cordon-hint",
        "cordon.refusal/1",
    ] {
        assert!(
            page.contains(&format!("`{field}`")),
            "docs/src/refused.md does not document `{field}`"
        );
    }
}
