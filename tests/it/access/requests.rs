//! What a sandbox sends to `access.cordon.internal` and what it gets: every problem of a bad request at its path,
//! requests counted per sandbox, the name answered by cordon alone in every spelling (never resolved, never a
//! tunnel), asking offered only where the policy says so, and the checks `check` makes of `access:`.

use serde_json::{Value, json};

use super::{ASK_AT, ask, asking, for_get, get, listed, rig, through};
use crate::rigs::process::cordon;
use crate::rigs::wait::TimedChild;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_bad_request_says_each_problem_at_its_path_and_files_nothing() {
    let rig = rig(true, &asking("auto_grant: true, max_lifetime: 30m")).await;
    let up = rig.up.addr.port();
    let rule = json!({"host": "pay.test", "ports": [up], "methods": ["GET"]});
    let cases: Vec<(String, &str)> = vec![
        ("not json".into(), "not JSON"),
        ("[1, 2]".into(), "not a JSON object"),
        (json!({"allow": [rule]}).to_string(), "reason: missing"),
        (json!({"allow": [rule], "reason": "  "}).to_string(), "reason: is empty"),
        (
            json!({"allow": [rule], "reason": "a\u{1b}[2Jb"}).to_string(),
            "control characters",
        ),
        (
            json!({"allow": [rule], "reason": "a\nb"}).to_string(),
            "control characters",
        ),
        (
            json!({"allow": [rule], "reason": "x".repeat(1001)}).to_string(),
            "longer than 1000",
        ),
        (
            json!({"allow": [rule], "reason": "r", "by": "admin"}).to_string(),
            "by: unknown field",
        ),
        (
            json!({"allow": [rule], "reason": "r", "lifetime": "soon"}).to_string(),
            "lifetime: \"soon\" is not a duration (",
        ),
        (
            json!({"allow": [rule], "reason": "r", "lifetime": "0s"}).to_string(),
            "lifetime: is zero",
        ),
        (
            json!({"allow": [rule], "reason": "r", "lifetime": "2h"}).to_string(),
            "access.max_lifetime 30m",
        ),
        (json!({"reason": "r"}).to_string(), "allow: missing"),
        (json!({"allow": [], "reason": "r"}).to_string(), "allow: is empty"),
        (
            json!({"allow": {"host": "pay.test"}, "reason": "r"}).to_string(),
            "allow: expected a list",
        ),
        (
            json!({"allow": [{"cidrs": ["127.0.0.0/8"]}], "reason": "r"}).to_string(),
            "allow[0].cidrs",
        ),
        (
            json!({"allow": [{"host": "pay.test", "action": "allow"}], "reason": "r"}).to_string(),
            "allow[0].action",
        ),
        (
            json!({"allow": [{"host": "pay.test", "ports": [70000]}], "reason": "r"}).to_string(),
            "allow[0].ports",
        ),
        (
            json!({"allow": [{"host": "pay.test", "colour": 1}], "reason": "r"}).to_string(),
            "allow[0].colour",
        ),
        (
            json!({"allow": [{"host": "pay .test"}], "reason": "r"}).to_string(),
            "allow[0].host",
        ),
        (
            json!({"allow": vec![rule.clone(); 17], "reason": "r"}).to_string(),
            "at most 16",
        ),
        (
            format!("{{\"allow\": [{rule}], \"reason\": \"{}\"}}", "y".repeat(70_000)),
            "at most 65536",
        ),
    ];
    for (body, wanted) in cases {
        let (status, v, _) = through(&rig, "POST", ASK_AT, Some(&body));
        assert_eq!(status, 400, "{body:.200}: {v}");
        assert_eq!(v["reason"], "access_invalid", "{v}");
        let details: Vec<String> = serde_json::from_value(v["details"].clone()).unwrap();
        let details = details.join("\n");
        assert!(details.contains(wanted), "{body:.200}: wanted {wanted:?} in {details}");
    }
    // Every problem at once, not the first alone.
    let body = json!({"allow": [{"host": "pay.test", "ports": [0]}, {"cidrs": ["10.0.0.0/8"]}], "reason": "", "x": 1});
    let (_, v, _) = through(&rig, "POST", ASK_AT, Some(&body.to_string()));
    let details: Vec<String> = serde_json::from_value(v["details"].clone()).unwrap();
    for wanted in [
        "x: unknown field",
        "reason: is empty",
        "allow[0].ports",
        "allow[1].cidrs",
    ] {
        assert!(details.iter().any(|d| d.contains(wanted)), "{wanted:?} in {details:?}");
    }
    assert!(listed(&rig).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn asking_is_counted_per_sandbox() {
    let rig = rig(true, &asking("auto_grant: false, per_hour: 3")).await;
    for n in 0..3 {
        let (status, v) = ask(&rig, &for_get(&rig, &format!("/p{n}"), "5m"));
        assert_eq!(status, 202, "{v}");
    }
    let (status, v) = ask(&rig, &for_get(&rig, "/p3", "5m"));
    assert_eq!((status, v["reason"].as_str()), (429, Some("access_too_often")), "{v}");
    assert_eq!(listed(&rig).await.len(), 3);

    // At most five wait at once, however fast the sandbox may ask.
    let rig = rig_with_many().await;
    for n in 0..5 {
        assert_eq!(ask(&rig, &for_get(&rig, &format!("/q{n}"), "5m")).0, 202);
    }
    let (status, v) = ask(&rig, &for_get(&rig, "/q5", "5m"));
    assert_eq!((status, v["reason"].as_str()), (429, Some("access_too_often")), "{v}");
    assert!(v["message"].as_str().unwrap().contains("already wait"), "{v}");
}

async fn rig_with_many() -> crate::rigs::console::ConsoleRig {
    rig(true, &asking("auto_grant: false, per_hour: 1000")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cordons_own_name_is_answered_by_cordon_alone_in_every_spelling() {
    let rig = rig(true, &asking("auto_grant: true")).await;
    // Any case, an explicit port: still cordon's, never resolved or sent on.
    for url in [
        "http://ACCESS.Cordon.Internal/v1/requests",
        "http://access.cordon.internal:80/v1/requests",
        "http://access.cordon.internal:8080/v1/requests",
        "http://access.cordon.internal/v1/requests/",
        "http://access.cordon.internal./v1/requests",
    ] {
        let (status, v, ctype) = through(&rig, "GET", url, None);
        assert_eq!((status, ctype.as_str()), (200, "application/json"), "{url}: {v}");
        assert!(v["requests"].is_array(), "{url}: {v}");
    }
    for (method, url) in [
        ("GET", "http://access.cordon.internal/"),
        ("PUT", "http://access.cordon.internal/v1/requests"),
        ("GET", "http://access.cordon.internal/v1/requests/ar-0000000000000000"),
        ("GET", "http://access.cordon.internal/v1/requests/../../etc/passwd"),
    ] {
        let (status, v, _) = through(&rig, method, url, None);
        assert_eq!(
            (status, v["reason"].as_str()),
            (404, Some("access_unknown")),
            "{method} {url}: {v}"
        );
    }
    // Not a tunnel: a CONNECT to the name is refused, and so is TLS to it.
    let out = crate::rigs::process::curl()
        .args(["-sS", "--max-time", "20", "-o", "/dev/null", "-w", "%{http_connect}"])
        .args(["-x", &format!("http://sb1:tok1@127.0.0.1:{}", rig.proxy), "-p"])
        .arg("http://access.cordon.internal:443/")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "400", "{out:?}");
    let log: Vec<Value> = rig
        .records_once("the CONNECT recorded with its reason", |r| {
            r["method"] == "CONNECT" && r["reason"] == "access_needs_http"
        })
        .await;
    assert!(
        log.iter()
            .all(|r| r["dialled"].is_null() || !r["host"].as_str().unwrap_or_default().contains("cordon")),
        "nothing to cordon's name was dialled"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn asking_is_offered_only_where_the_policy_says_so() {
    let plain = rig(true, "").await;
    let (status, refusal, _) = through(
        &plain,
        "GET",
        &format!("http://pay.test:{}/status", plain.up.addr.port()),
        None,
    );
    assert_eq!(status, 403);
    assert_eq!(refusal["ask"], true, "a person can still help: {refusal}");
    assert!(refusal.get("ask_at").is_none(), "but not from inside: {refusal}");
    let (status, v) = ask(&plain, &for_get(&plain, "/status", "5m"));
    assert_eq!((status, v["reason"].as_str()), (403, Some("access_not_offered")), "{v}");

    let offered = rig(true, &asking("auto_grant: false")).await;
    // A plain-text client reads it too, and a CONNECT's client in a header.
    let out = crate::rigs::process::curl()
        .args(["-sS", "-i", "--max-time", "20"])
        .args(["-x", &format!("http://sb1:tok1@127.0.0.1:{}", offered.proxy)])
        .arg(format!("http://pay.test:{}/status", offered.up.addr.port()))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_lowercase();
    assert!(
        text.contains("x-cordon-ask-at: http://access.cordon.internal/v1/requests"),
        "{text}"
    );
    assert!(
        text.contains("ask for access: post http://access.cordon.internal/v1/requests"),
        "{text}"
    );
    // A refusal asking cannot help with names nowhere to ask: a path with a dot segment, sent as it is.
    let raw = raw_get(
        offered.proxy,
        &format!("http://pay.test:{}/a/../status", offered.up.addr.port()),
    );
    assert!(raw.starts_with("HTTP/1.1 400"), "{raw}");
    assert!(raw.contains("\"reason\":\"dot_segment\""), "{raw}");
    assert!(
        !raw.to_lowercase().contains("ask_at") && !raw.contains("x-cordon-ask-at"),
        "{raw}"
    );
    assert_eq!(get(&offered, "/status"), 403);
}

/// `GET url` as sandbox sb1 through the proxy on `port`, written by hand (as it is, no path cleaned), asking for
/// JSON: the whole answer.
fn raw_get(port: u16, url: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
    let auth = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "sb1:tok1");
    let host = url.trim_start_matches("http://").split('/').next().unwrap();
    write!(
        s,
        "GET {url} HTTP/1.1\r\nHost: {host}\r\nProxy-Authorization: Basic {auth}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// `cordon check` of the console rig's kind of configuration with `policy` as the one policy.
fn check(dir: &std::path::Path, top: &str, policy: &str) -> (i32, String) {
    let yaml = format!(
        "listen: {{ proxy: 127.0.0.1:0 }}\n{top}sandboxes:\n  - {{ id: sb1, user: alice, token_sha256: {h}, policy: pay }}\npolicies:\n  pay:\n{policy}",
        h = crate::rigs::client::hash("tok1")
    );
    let path = dir.join("cordon.yaml");
    std::fs::write(&path, yaml).unwrap();
    let (code, out, err) = cordon(&["check", "--config", path.to_str().unwrap()]);
    (code, format!("{out}{err}"))
}

#[test]
fn check_refuses_access_without_a_boundary_or_on_a_shared_store_or_out_of_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let allow = "    allow:\n      - { host: pay.test }\n";
    let boundary = "    boundary:\n      allow:\n        - { host: pay.test }\n";
    let ok = check(
        dir.path(),
        "",
        &format!("{allow}{boundary}    access: {{ auto_grant: true, max_lifetime: 2h, per_hour: 5 }}\n"),
    );
    assert_eq!(ok.0, 0, "{}", ok.1);
    for (top, access, wanted) in [
        (
            "",
            "    access: { auto_grant: true }\n",
            "policies.pay.access: needs policies.pay.boundary",
        ),
        (
            "control: { store: \"postgres://cordon@db.internal/cordon?sslmode=require\", store_key: { env: CORDON_STORE_KEY } }\n",
            "    access: {}\n",
            "policies.pay.access: asking for access is kept by the replica",
        ),
        ("", "    access: { per_hour: 0 }\n", "policies.pay.access.per_hour"),
        (
            "",
            "    access: { max_lifetime: 8d }\n",
            "policies.pay.access.max_lifetime: must be at most 7days",
        ),
        (
            "",
            "    access: { max_lifetime: soon }\n",
            "policies.pay.access.max_lifetime",
        ),
        (
            "",
            "    access: { auto_grant: maybe }\n",
            "policies.pay.access.auto_grant",
        ),
        ("", "    access: { ask: true }\n", "unknown field `ask`"),
    ] {
        let with_boundary = !wanted.contains("needs policies.pay.boundary");
        let policy = format!("{allow}{}{access}", if with_boundary { boundary } else { "" });
        let (code, said) = check(dir.path(), top, &policy);
        assert_ne!(code, 0, "{access}: accepted");
        assert!(said.contains(wanted), "{access}: wanted {wanted:?} in\n{said}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_approvals_examples_decide_access_requests_as_printed() {
    use crate::cli::examples::shown;
    let rig = rig(true, &asking("auto_grant: false")).await;
    let (_, v) = ask(&rig, &for_get(&rig, "/status", "10m"));
    let id = v["id"].as_str().unwrap().to_owned();
    let bin = std::path::Path::new(crate::rigs::process::BIN)
        .parent()
        .unwrap()
        .to_owned();
    let run = |path: &str, line: &str| -> String {
        if !path.is_empty() {
            shown(path, line);
        }
        let out = std::process::Command::new("sh")
            .args(["-c", line])
            .env("PATH", format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()))
            .env("CORDON_CONFIG", &rig.config)
            .env("CONSOLE_OIDC_SECRET", "console-secret")
            .env("NO_COLOR", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
            .timed_wait_with_output()
            .unwrap();
        assert!(out.status.success(), "{line}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let table = run("approvals access", "cordon approvals access");
    let row = table.lines().nth(1).unwrap_or_default();
    assert!(
        row.starts_with(&id) && row.contains("pending") && row.contains("method"),
        "{table}"
    );
    let listed: Value = serde_json::from_str(&run("approvals access", "cordon approvals access --json")).unwrap();
    assert_eq!(listed["requests"][0]["id"], id.as_str());
    let granted = run(
        "approvals access",
        "cordon approvals allow \"$(cordon approvals access --ids | head -n 1)\"",
    );
    let granted: Value = serde_json::from_str(&granted).unwrap();
    assert_eq!(granted["request"]["state"], "granted", "{granted}");
    assert_eq!(get(&rig, "/status"), 200);
    assert_eq!(run("", "cordon approvals access --ids"), "", "none waits now");
}

#[tokio::test]
async fn a_dns_query_for_cordons_name_is_refused_even_where_a_rule_names_it() {
    use hickory_proto::op::{Message, Query, ResponseCode};
    use hickory_proto::rr::{Name, RecordType};
    // A policy that names the host, and offers asking: the name is still cordon's, never resolved.
    let yaml = r#"
network: { allow_cidrs: ["127.0.0.0/8"], hosts: { access.cordon.internal: ["127.0.0.9"] } }
sandboxes:
  - { id: vm, user: alice, policy: p, source_cidrs: ["127.0.0.1/32"] }
policies:
  p:
    allow:
      - host: access.cordon.internal
    boundary:
      allow:
        - host: access.cordon.internal
    access: {}
"#;
    let config = cordon::config::Config::parse("dns.yaml", yaml).unwrap();
    let audit = crate::rigs::proxy::Capture::default();
    let state = cordon::state::ProxyState::new(config, std::sync::Arc::new(audit.clone()), vec![])
        .await
        .unwrap();
    let (udp, tcp) = cordon::proxy::entry::dns::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let server = udp.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(cordon::proxy::entry::dns::serve(udp, tcp, state, async move {
        let _ = stopped.await;
    }));
    for name in ["access.cordon.internal", "ACCESS.cordon.internal"] {
        let mut msg = Message::query();
        msg.metadata.recursion_desired = true;
        msg.add_query(Query::query(Name::from_ascii(name).unwrap(), RecordType::A));
        let sock = tokio::net::UdpSocket::bind(("127.0.0.1", 0)).await.unwrap();
        sock.send_to(&msg.to_vec().unwrap(), server).await.unwrap();
        let mut buf = vec![0u8; 4096];
        let (len, _) = tokio::time::timeout(std::time::Duration::from_secs(5), sock.recv_from(&mut buf))
            .await
            .expect("the responder answered")
            .unwrap();
        let answer = Message::from_vec(&buf[..len]).unwrap();
        assert_eq!(answer.metadata.response_code, ResponseCode::Refused, "{name}");
        assert!(answer.answers.is_empty(), "{name}");
    }
    let records = audit.now();
    assert!(
        records.iter().all(|r| r.reason.as_deref() == Some("access_needs_http")),
        "{records:?}"
    );
    let _ = stop.send(());
}
