//! `cordon explain` is the live decision (issue 36, item 5): a table of requests, each explained (`--json`) and
//! then sent live through the proxy with curl; every exchange explain names (the CONNECT, the request inside
//! it, or the one plain request) must be the audit record live traffic wrote, field by field: decision, reason
//! code, rule, status and the credentials applied. Methods in other cases, paths with encodings, hosts with
//! capitals and a trailing dot, ports outside the rules, a blind tunnel and a policy in report mode.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use serde_json::Value;

use crate::rigs::client::hash;
use crate::rigs::ports::free_port;
use crate::rigs::process::{BIN, curl, spawn_cordon};
use crate::rigs::tls::{https_upstream, test_ca};
use crate::rigs::upstreams::{Upstream, upstream};
use crate::rigs::wait::{TimedChild, Within};

pub(super) struct Rig {
    dir: tempfile::TempDir,
    config: PathBuf,
    /// cordon's proxy port (on 127.0.0.1, which a rule of policy `p` allows: its own address, refused live).
    pub(super) port: u16,
    child: Child,
    /// The HTTPS upstream (127.0.0.2) and the plain one (127.0.0.3).
    pub(super) tls: Upstream,
    pub(super) plain: Upstream,
    /// A port no rule allows (and nothing listens on).
    pub(super) other: u16,
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.timed_wait();
    }
}

fn yaml(dir: &Path, port: u16, u: u16, p: u16) -> String {
    format!(
        r#"
listen: {{ proxy: 127.0.0.1:{port} }}
network:
  allow_cidrs: ["127.0.0.0/8"]
  hosts: {{ api.allowed.test: 127.0.0.2, www.allowed.test: 127.0.0.2, denied.test: 127.0.0.2, plain.allowed.test: 127.0.0.3 }}
ca: {{ dir: {d}/cas }}
upstream: {{ extra_roots: [{d}/upstream-ca.pem] }}
audit: {{ path: {d}/audit.jsonl }}
credentials:
  api:
    source: {{ env: EXPLAIN_API_KEY }}
    bind: {{ hosts: [api.allowed.test], ports: [{u}], methods: [GET, DELETE], paths: ["/v1/**"] }}
    inject: {{ header: Authorization, value: "Bearer {{secret}}" }}
  www:
    source: {{ env: EXPLAIN_API_KEY }}
    bind: {{ hosts: [www.allowed.test], ports: [{u}] }}
    inject: {{ header: X-Key, value: "{{secret}}" }}
  plain:
    source: {{ env: EXPLAIN_API_KEY }}
    bind: {{ hosts: [plain.allowed.test], ports: [{p}] }}
    inject: {{ header: X-Key, value: "{{secret}}" }}
sandboxes:
  - {{ id: s, user: alice, token_sha256: {hs}, policy: p }}
  - {{ id: r, user: bob, token_sha256: {hr}, policy: watch }}
policies:
  p:
    credentials: [api, www, plain]
    allow:
      - {{ host: api.allowed.test, ports: [{u}], methods: [GET, POST], paths: ["/v1/**"] }}
      - {{ host: api.allowed.test, ports: [{u}], methods: [DELETE], paths: ["/v1/items/*"] }}
      - {{ host: www.allowed.test, ports: [{u}], tls: tunnel }}
      - {{ host: plain.allowed.test, ports: [{p}], methods: [GET], paths: ["/public/**"] }}
      - {{ cidrs: ["127.0.0.1/32"], ports: [{port}] }}
  watch:
    mode: report
    credentials: [api]
    allow:
      - {{ host: api.allowed.test, ports: [{u}], methods: [GET], paths: ["/v1/**"] }}
"#,
        d = dir.display(),
        hs = hash("tok-s"),
        hr = hash("tok-r"),
    )
}

pub(super) async fn start() -> Rig {
    let ca = test_ca("upstream test CA");
    let names = ["api.allowed.test", "www.allowed.test", "denied.test"];
    let tls = https_upstream("127.0.0.2", ca.server_config(&names)).await;
    let plain = upstream("127.0.0.3").await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("upstream-ca.pem"), &ca.pem).unwrap();
    let port = free_port();
    let config = dir.path().join("cordon.yaml");
    std::fs::write(&config, yaml(dir.path(), port, tls.addr.port(), plain.addr.port())).unwrap();
    let child = spawn_cordon(&config, port, &[("EXPLAIN_API_KEY", "sk-explain-live")]).await;
    // What curl trusts: each sandbox's CA (intercepted hosts) and the upstream's (the blind tunnel).
    for id in ["s", "r"] {
        let out = Command::new(BIN)
            .args(["ca", "export", "--sandbox", id, "--config"])
            .arg(&config)
            .timed_output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let bundle = format!("{}{}", String::from_utf8_lossy(&out.stdout), ca.pem);
        std::fs::write(dir.path().join(format!("{id}-trust.pem")), bundle).unwrap();
    }
    Rig {
        dir,
        config,
        port,
        child,
        tls,
        plain,
        other: free_port(),
    }
}

impl Rig {
    /// `cordon explain --json` of `method url` for `sandbox`: (exit code, the answer).
    pub(super) fn explain(&self, sandbox: &str, method: &str, url: &str) -> (i32, Value) {
        let out = Command::new(BIN)
            .args([
                "explain",
                "--json",
                "--sandbox",
                sandbox,
                "--method",
                method,
                "--config",
            ])
            .arg(&self.config)
            .arg(url)
            .env("EXPLAIN_API_KEY", "sk-explain-live")
            .timed_output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let v = serde_json::from_str(&text).unwrap_or_else(|e| {
            panic!(
                "explain {method} {url}: not JSON ({e}): {text}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (out.status.code().unwrap_or(-1), v)
    }

    /// `method url` live through the proxy as `sandbox`: (the status curl got, from the CONNECT when that
    /// refused, and the audit records the request left).
    pub(super) async fn live(&self, sandbox: &str, method: &str, url: &str, seen: &mut usize) -> (u16, Vec<Value>) {
        let mut c = curl();
        c.args(["-s", "--path-as-is"])
            .args(["-x", &format!("http://{sandbox}:tok-{sandbox}@127.0.0.1:{}", self.port)])
            .arg("--cacert")
            .arg(self.dir.path().join(format!("{sandbox}-trust.pem")))
            .args(["-X", method, url]);
        let r = crate::rigs::curl::run(c);
        let status = if r.status == 0 { r.connect } else { r.status };
        // A request's records end with its tunnel's (written when the tunnel closes) or the plain request's;
        // a request inside a tunnel may finish its record a moment after the tunnel's.
        let last = if url.starts_with("https") { "connect" } else { "http" };
        let read = || {
            let text = std::fs::read_to_string(self.dir.path().join("audit.jsonl")).unwrap_or_default();
            // The chain's own records (its start) are not traffic; a line still being written (no newline yet)
            // is read next time.
            let whole = text.rfind('\n').map_or("", |end| &text[..end]);
            whole
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .filter(|r| ["connect", "https", "http"].contains(&r["kind"].as_str().unwrap_or_default()))
                .skip(*seen)
                .collect::<Vec<Value>>()
        };
        for _ in 0..300 {
            if read().iter().any(|r| r["kind"] == last) {
                tokio::time::sleep(Duration::from_millis(150)).await;
                let records = read();
                *seen += records.len();
                let client = &records[0]["client"];
                assert!(
                    records.iter().all(|r| r["client"] == *client),
                    "{method} {url}: {records:?}"
                );
                return (status, records);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("no {last} record for {method} {url}");
    }
}

/// Where what explain said (`explained`, its `--json`) and what live traffic did (curl's `status`, the audit
/// `records`, in explain's order) part: every exchange's kind, decision, reason, rule, credentials and status.
pub(super) fn differences(explained: &Value, status: u16, records: &[Value]) -> Vec<String> {
    let exchanges = explained["exchanges"].as_array().unwrap();
    let mut wrong = Vec::new();
    if exchanges.len() != records.len() {
        wrong.push(format!(
            "{} exchanges explained, {} recorded",
            exchanges.len(),
            records.len()
        ));
    }
    let mut upstream_failed = false;
    for (e, r) in exchanges.iter().zip(records) {
        // explain dials nothing: where it says the request goes upstream (no status of cordon's own) and live the
        // upstream then failed (nothing listens there: the record's reason and status are the failure's), cordon
        // decided alike and only the upstream's side differs.
        let failed = e["status"].is_null() && r["side"] == "upstream";
        upstream_failed |= failed;
        let credentials = r["credentials"].as_array().cloned().unwrap_or_default();
        let fields = [
            ("kind", &e["kind"], &r["kind"]),
            ("decision", &e["decision"], &r["decision"]),
            ("reason", &e["reason"], if failed { &e["reason"] } else { &r["reason"] }),
            ("rule", &e["rule"], &r["rule"]),
            ("credentials", &e["credentials"], &Value::Array(credentials)),
        ];
        for (name, said, did) in fields {
            if said != did {
                wrong.push(format!("{} {name}: explain {said}, live {did}", e["kind"]));
            }
        }
        // The status cordon answers itself, or (null) the upstream's: 200 from the test upstreams.
        let answered = e["status"].as_u64().unwrap_or(200);
        if r["status"] != answered && !failed {
            wrong.push(format!(
                "{} status: explain {answered}, live {}",
                e["kind"], r["status"]
            ));
        }
    }
    let refusal = exchanges
        .iter()
        .find_map(|e| e["status"].as_u64().filter(|s| *s != 200));
    if u64::from(status) != refusal.unwrap_or(200) && !(upstream_failed && refusal.is_none()) {
        wrong.push(format!("curl got {status}, explain said {refusal:?}"));
    }
    wrong
}

/// The live records in explain's order: the CONNECT's first (it is written last, when its tunnel closes).
pub(super) fn in_order(mut records: Vec<Value>) -> Vec<Value> {
    if let Some(i) = records.iter().position(|r| r["kind"] == "connect") {
        let connect = records.remove(i);
        records.insert(0, connect);
    }
    records
}

#[tokio::test(flavor = "multi_thread")]
async fn explain_and_live_traffic_decide_every_request_alike() {
    let rig = start().await;
    let (u, p, o) = (rig.tls.addr.port(), rig.plain.addr.port(), rig.other);
    let api = |path: &str| format!("https://api.allowed.test:{u}{path}");
    let www = |path: &str| format!("https://www.allowed.test:{u}{path}");
    let plain = |path: &str| format!("http://plain.allowed.test:{p}{path}");
    // (sandbox, method, URL, what explain must say: allow or deny, and the reason code of the refusal or of
    // what report mode let through). The expectation pins the table to the policy; the comparison with live
    // traffic below is what the test is about.
    let table: Vec<(&str, &str, String, &str, Option<&str>)> = vec![
        ("s", "GET", api("/v1/models"), "allow", None),
        ("s", "get", api("/v1/models"), "deny", Some("method_not_allowed")),
        ("s", "Get", api("/v1/models"), "deny", Some("method_not_allowed")),
        // Allowed by the rule, but the credential is bound to GET and DELETE only.
        ("s", "POST", api("/v1/models"), "allow", None),
        ("s", "post", api("/v1/models"), "deny", Some("method_not_allowed")),
        ("s", "DELETE", api("/v1/items/3"), "allow", None),
        ("s", "delete", api("/v1/items/3"), "deny", Some("method_not_allowed")),
        ("s", "DELETE", api("/v1/models/a/b"), "deny", Some("path_not_allowed")),
        ("s", "PATCH", api("/v1/models"), "deny", Some("method_not_allowed")),
        ("s", "GET", api("/admin"), "deny", Some("path_not_allowed")),
        ("s", "GET", api("/V1/models"), "deny", Some("path_not_allowed")),
        ("s", "GET", api("/v1/%2e%2e/admin"), "deny", Some("dot_segment")),
        ("s", "GET", api("/v1/..%2Fadmin"), "deny", Some("dot_segment")),
        ("s", "GET", api("/v1/./models"), "deny", Some("dot_segment")),
        ("s", "GET", api("/v1/a%2Fb"), "allow", None),
        ("s", "GET", api("/v1/%7Euser"), "allow", None),
        ("s", "GET", api("/v1/%zz"), "deny", Some("bad_escape")),
        ("s", "GET", api("/%761/models"), "deny", Some("path_not_allowed")),
        (
            "s",
            "GET",
            format!("https://API.Allowed.TEST:{u}/v1/models"),
            "allow",
            None,
        ),
        (
            "s",
            "GET",
            format!("https://api.allowed.test.:{u}/v1/models"),
            "allow",
            None,
        ),
        (
            "s",
            "GET",
            format!("https://api.allowed.test:{o}/v1/models"),
            "deny",
            Some("port_not_allowed"),
        ),
        ("s", "GET", www("/anything"), "allow", None),
        ("s", "delete", www("/anything"), "allow", None),
        ("s", "GET", format!("https://WWW.allowed.test.:{u}/x"), "allow", None),
        (
            "s",
            "GET",
            format!("https://www.allowed.test:{o}/x"),
            "deny",
            Some("port_not_allowed"),
        ),
        ("s", "GET", format!("https://denied.test:{u}/"), "deny", Some("no_rule")),
        ("s", "GET", plain("/public/x"), "allow", None),
        ("s", "get", plain("/public/x"), "deny", Some("method_not_allowed")),
        ("s", "GET", plain("/private"), "deny", Some("path_not_allowed")),
        ("s", "GET", plain("/public/%2E%2E/private"), "deny", Some("dot_segment")),
        (
            "s",
            "GET",
            format!("http://PLAIN.Allowed.Test.:{p}/public/x"),
            "allow",
            None,
        ),
        (
            "s",
            "GET",
            format!("http://plain.allowed.test:{o}/public/x"),
            "deny",
            Some("port_not_allowed"),
        ),
        ("s", "GET", format!("http://denied.test:{p}/"), "deny", Some("no_rule")),
        // cordon's own listener, which a rule allows and the guard refuses: explain says what live traffic does.
        (
            "s",
            "GET",
            format!("http://127.0.0.1:{}/", rig.port),
            "deny",
            Some("self_address"),
        ),
        (
            "s",
            "GET",
            format!("https://127.0.0.1:{}/", rig.port),
            "deny",
            Some("self_address"),
        ),
        // Report mode: everything goes, and what would be denied says why.
        ("r", "GET", api("/v1/models"), "allow", None),
        ("r", "get", api("/v1/models"), "allow", Some("method_not_allowed")),
        (
            "r",
            "GET",
            format!("https://denied.test:{u}/"),
            "allow",
            Some("no_rule"),
        ),
        ("r", "GET", plain("/private"), "allow", Some("no_rule")),
        // A refusal that is not the policy's is still a refusal in report mode.
        ("r", "GET", api("/v1/%2e%2e/admin"), "deny", Some("dot_segment")),
    ];
    let mut seen = 0;
    let mut failures = Vec::new();
    for (sandbox, method, url, verdict, reason) in &table {
        let (code, explained) = rig.explain(sandbox, method, url);
        let (status, records) = rig.live(sandbox, method, url, &mut seen).await;
        let case = format!("{sandbox} {method} {url}");
        assert_eq!(explained["verdict"], *verdict, "{case}: {explained:#}");
        assert_eq!(code, if *verdict == "allow" { 0 } else { 1 }, "{case}");
        let exchanges = explained["exchanges"].as_array().unwrap();
        let reasons: Vec<&str> = exchanges.iter().filter_map(|e| e["reason"].as_str()).collect();
        assert_eq!(reasons.last().copied(), *reason, "{case}: {explained:#}");
        let records = in_order(records);
        let wrong = differences(&explained, status, &records);
        if !wrong.is_empty() {
            failures.push(format!("{case}:\n  {}\n  records: {records:?}", wrong.join("\n  ")));
        }
    }
    assert!(
        failures.is_empty(),
        "explain and live traffic part:\n{}",
        failures.join("\n")
    );
    // The credential reached the upstream exactly where explain said it is applied.
    for seen in rig.tls.seen() {
        let applied = seen.header("authorization") == Some("Bearer sk-explain-live");
        let bound = ["GET", "DELETE"].contains(&seen.method.as_str()) && seen.uri.contains("/v1/");
        assert_eq!(applied, bound, "{} {}", seen.method, seen.uri);
    }
    assert!(
        rig.plain.seen().iter().all(|s| s.header("x-key").is_none()),
        "a credential went over cleartext"
    );
}

#[test]
fn explain_says_a_refused_request_carries_no_credential() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("upstream-ca.pem"), test_ca("upstream test CA").pem).unwrap();
    let config = dir.path().join("cordon.yaml");
    std::fs::write(&config, yaml(dir.path(), 3128, 8443, 8080)).unwrap();
    let explain = |method: &str, url: &str| {
        let out = Command::new(BIN)
            .args(["explain", "--sandbox", "s", "--method", method, "--config"])
            .arg(&config)
            .arg(url)
            .env("EXPLAIN_API_KEY", "k")
            .timed_output()
            .unwrap();
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (out, err) = explain("get", "https://api.allowed.test:8443/v1/models");
    assert!(
        out.contains("deny (method_not_allowed)") && out.contains("verdict  DENY"),
        "{out}"
    );
    assert!(!out.contains("applied (header"), "{out}");
    assert!(err.contains("\"get\" is not GET: methods are case-sensitive"), "{err}");
    // The credential is bound to DELETE /v1/**, the rules allow DELETE on /v1/items/* only.
    let (out, _) = explain("DELETE", "https://api.allowed.test:8443/v1/models/a/b");
    assert!(out.contains("deny (path_not_allowed)"), "{out}");
    assert!(
        out.contains("credential api: not applied: the request is refused"),
        "{out}"
    );
    assert!(!out.contains("applied (header"), "{out}");
    for url in [
        "https://api.allowed.test:8443/v1/%2e%2e/x",
        "https://api.allowed.test:8443/admin",
    ] {
        let (out, _) = explain("GET", url);
        assert!(
            out.contains("verdict  DENY") && !out.contains("applied (header"),
            "{out}"
        );
    }
    let (out, _) = explain("GET", "https://api.allowed.test:9/v1/models");
    assert!(out.contains("inside   not reached: the CONNECT is refused"), "{out}");
    let (out, _) = explain("GET", "https://www.allowed.test:8443/x");
    assert!(out.contains("blind tunnel") && out.contains("verdict  ALLOW"), "{out}");
    let (out, _) = explain("GET", "https://api.allowed.test:8443/v1/models");
    assert!(out.contains("credential api: applied (header authorization)"), "{out}");
}
