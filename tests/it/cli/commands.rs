//! The `cordon` binary: check, explain, and run driven by curl, with audit lines on stdout.

use crate::rigs::client::*;
use crate::rigs::process::Signal;
use crate::rigs::process::{BIN, cordon, curl, signal_and_wait, spawn_cordon};
use crate::rigs::proxy::*;
use crate::rigs::upstreams::*;
use crate::rigs::wait::{TimedChild, Within};
use std::io::Write;
use std::process::{Command, Stdio};

fn write_config(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f
}

#[test]
fn check_embedded_config_prints_a_summary() {
    let (code, out, err) = cordon(&["check"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("config/cordon.yaml (embedded): ok"), "{out}");
    assert!(
        out.contains("listen   proxy 127.0.0.1:3128, admin 127.0.0.1:9090 (plain HTTP on loopback)"),
        "{out}"
    );
    // The promise of the book's People page (docs/src/admin-access.md): the console, with token sign-in, under
    // /console/ on the admin listener.
    assert!(
        out.contains("console 127.0.0.1:9090 under /console/ (the admin listener's; sign in with an admin token"),
        "{out}"
    );
    assert!(out.contains("demo"), "{out}");
}

#[test]
fn check_summarises_audit_export_on_violation_and_budgets() {
    let f = write_config(
        "audit:\n  path: /tmp/cordon-check-test.jsonl\n  export: { otlp: { endpoint: \"http://127.0.0.1:4318/v1/logs\" } }\n\
         credentials:\n  gh:\n    source: { env: PATH }\n    bind: { hosts: [api.github.com] }\n    inject: { header: \
         Authorization, value: \"token {secret}\" }\n    budget: { requests: 100, bytes: 1000, window: 1h }\n\
         policies:\n  agents:\n    credentials: [gh]\n    credential_budget: { gh: { requests: 5, per: user } }\n    \
         on_violation: { metadata: 3, denied: 50, window: 5m, action: hold }\n    allow: []\n",
    );
    let (code, out, err) = cordon(&["check", "--config", f.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("exported to http://127.0.0.1:4318/v1/logs (spool /tmp/cordon-check-test.jsonl.spool)"),
        "{out}"
    );
    assert!(
        out.contains("agents           enforce  0 rules; on_violation metadata 3, denied 50 within 5m -> hold"),
        "{out}"
    );
    assert!(
        out.contains("budget   gh: 100 requests, 1000 bytes per 1h per sandbox"),
        "{out}"
    );
    assert!(
        out.contains("budget   gh in agents: 5 requests per 1h per user"),
        "{out}"
    );
}

#[test]
fn check_reports_every_error_with_its_location_and_exits_2() {
    let f = write_config("policies:\n  web:\n    allow:\n      - hots: example.com\n");
    let (code, _out, err) = cordon(&["check", "--config", f.path().to_str().unwrap()]);
    assert_eq!(code, 2);
    let file = f.path().display().to_string();
    assert!(
        err.contains(&format!("{file}:4:")),
        "line and column of the parser: {err}"
    );
    assert!(err.contains("policies.web.allow[0]") && err.contains("hots"), "{err}");

    let f = write_config(
        "sandboxes:\n  - {id: a, user: u, token_sha256: zz, policy: nope}\npolicies:\n  web:\n    allow:\n      - host: \"*github.com\"\n      - host: ok.com\n        ports: [0]\ntimeouts:\n  connect: soon\n",
    );
    let (code, _out, err) = cordon(&["check", "--config", f.path().to_str().unwrap()]);
    assert_eq!(code, 2);
    for needle in [
        "sandboxes[0].token_sha256",
        "sandboxes[0].policy: \"nope\" is not a policy; the policies are: web",
        "policies.web.allow[0].host",
        "*.github.com",
        "policies.web.allow[1].ports[0]",
        "timeouts.connect",
    ] {
        assert!(err.contains(needle), "missing {needle:?} in:\n{err}");
    }
    assert!(err.contains("5 error(s)"), "{err}");
}

#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    // `cordon check | head`: the reader is gone before cordon writes.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(BIN)
        .arg("check")
        .env("CORDON_STATE_DIR", crate::rigs::process::state_dir())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
        .timed_wait_with_output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(141), "{err}");
}

#[test]
fn explain_says_why() {
    let (code, out, _) = cordon(&["explain", "--sandbox", "demo", "http://169.254.169.254/"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("metadata_address") && out.contains("verdict  DENY"),
        "{out}"
    );
    let (code, out, _) = cordon(&["explain", "--sandbox", "demo", "http://2852039166/"]);
    assert_eq!(code, 1);
    assert!(out.contains("169.254.169.254:80 refused (metadata_address)"), "{out}");
    let (code, _, err) = cordon(&["explain", "--sandbox", "nobody", "http://example.com/"]);
    assert_eq!(code, 2);
    assert!(err.contains("the sandboxes are: demo"), "{err}");
}

#[test]
fn explain_an_allowed_host() {
    let yaml = format!(
        "network:\n  allow_cidrs: [127.0.0.0/8]\n  hosts: {{ api.test: 127.0.0.2 }}\nsandboxes:\n  - {{id: s, user: u, token_sha256: {}, policy: p}}\ncredentials:\n  key:\n    source: {{ env: PATH }}\n    bind: {{ hosts: [api.test], ports: [80, 443] }}\n    inject: {{ header: Authorization, value: \"Bearer {{secret}}\" }}\npolicies:\n  p:\n    credentials: [key]\n    allow:\n      - host: api.test\n",
        hash("t")
    );
    let f = write_config(&yaml);
    let (code, out, _) = cordon(&[
        "explain",
        "--config",
        f.path().to_str().unwrap(),
        "--sandbox",
        "s",
        "http://api.test/x",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("allow by rule 0") && out.contains("127.0.0.2:80 may be dialled"),
        "{out}"
    );
}

#[test]
fn token_hash_reads_stdin() {
    let mut child = Command::new(BIN)
        .args(["token", "hash"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"demo-token\n").unwrap();
    let out = child.timed_wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), hash("demo-token"));
}

/// `cordon reasons --markdown` is the table the book's Troubleshooting page starts with, `cordon reasons` the same
/// codes in aligned columns for people, and one code's line says how the sandbox was answered; a wrong code says
/// the closest one.
#[test]
fn reasons_are_the_troubleshooting_table_and_a_wrong_code_names_the_closest() {
    let people = Command::new(BIN).arg("reasons").timed_output().unwrap();
    let people = String::from_utf8_lossy(&people.stdout).into_owned();
    let mut rows = people.lines();
    let head = rows.next().unwrap();
    assert!(
        head.starts_with("CODE") && head.contains("ANSWER") && head.contains("MEANING"),
        "{people}"
    );
    let at = head.find("MEANING").unwrap();
    let no_rule = rows.find(|r| r.starts_with("no_rule ")).unwrap();
    assert!(
        no_rule.contains(" 403 ") && no_rule[at..].starts_with("no rule of the policy"),
        "{no_rule}"
    );
    assert!(!people.contains('|'), "{people}");
    let all = Command::new(BIN)
        .args(["reasons", "--markdown"])
        .timed_output()
        .unwrap();
    assert!(all.status.success());
    let table = String::from_utf8_lossy(&all.stdout).into_owned();
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/src/troubleshooting.md")).unwrap();
    // The page links each code to its section: [`no_rule`](#no_rule) there is `no_rule` here.
    let unlinked: String = page
        .split("](#")
        .enumerate()
        .map(|(i, piece)| {
            if i == 0 {
                piece
            } else {
                &piece[piece.find(')').unwrap() + 1..]
            }
        })
        .collect::<String>()
        .replace("[`", "`");
    assert!(unlinked.contains(&table), "{table}");
    assert!(table.lines().count() > 100, "{table}");
    let one = Command::new(BIN)
        .args(["reasons", "method_not_allowed"])
        .timed_output()
        .unwrap();
    let line = String::from_utf8_lossy(&one.stdout).into_owned();
    assert!(
        one.status.success() && line.starts_with("method_not_allowed  403  "),
        "{line}"
    );
    // And what to do about it, as the Troubleshooting page says.
    let todo = line
        .lines()
        .nth(1)
        .and_then(|l| l.strip_prefix("what to do: "))
        .unwrap_or_default();
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/src/troubleshooting.md")).unwrap();
    assert!(todo.len() > 20 && page.contains(todo), "{line}");
    let wrong = Command::new(BIN)
        .args(["reasons", "method_not_alowed"])
        .timed_output()
        .unwrap();
    let said = String::from_utf8_lossy(&wrong.stderr).into_owned();
    assert_eq!(wrong.status.code(), Some(2), "{said}");
    assert!(said.contains("did you mean method_not_allowed?"), "{said}");
}

#[tokio::test(flavor = "multi_thread")]
async fn run_with_curl_through_the_proxy() {
    let up = upstream("127.0.0.2").await;
    let (echo, _) = echo("127.0.0.3").await;
    let port = crate::rigs::ports::free_port();
    let yaml = format!(
        "listen:\n  proxy: 127.0.0.1:{port}\n{}",
        config(up.addr.port(), echo.port(), "")
    );
    let (child, _f) = run_cordon(&yaml, port).await;
    let proxy = format!("http://sb1:tok1@127.0.0.1:{port}");
    let url = format!("http://allowed.test:{}/hi", up.addr.port());

    let out = curl().args(["-x", &proxy, &url]).timed_output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "hello from upstream\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A denied destination: curl shows cordon's answer (in text: curl's `Accept: */*` would take JSON).
    let out = curl()
        .args([
            "-x",
            &proxy,
            "-H",
            "Accept: text/plain",
            "-w",
            "%{http_code}",
            "http://unlisted.test/",
        ])
        .timed_output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("cordon: denied") && text.contains("reason: no_rule") && text.ends_with("403"),
        "{text}"
    );

    // Wrong credentials.
    let bad = format!("http://sb1:nope@127.0.0.1:{port}");
    let out = curl()
        .args(["-x", &bad, "-w", "%{http_code}", "-o", "/dev/null", &url])
        .timed_output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "407");

    let status = signal_and_wait(child, Signal::SIGTERM).await;
    assert!(status.status.success(), "exit on SIGTERM: {:?}", status.status);
    let stdout = String::from_utf8_lossy(&status.stdout);
    let lines: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // The chain's own lines (the start and the checkpoints) frame the records.
    assert_eq!(lines[0]["kind"], "audit_start");
    assert_eq!(
        (&lines[lines.len() - 1]["kind"], &lines[lines.len() - 1]["final"]),
        (&serde_json::json!("checkpoint"), &serde_json::json!(true))
    );
    let records: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|r| r["kind"] != "audit_start" && r["kind"] != "checkpoint")
        .collect();
    assert_eq!(records.len(), 3, "one JSON record per request on stdout:\n{stdout}");
    assert_eq!(records[0]["kind"], "http");
    assert_eq!(records[0]["sandbox"], "sb1");
    assert_eq!(records[0]["status"], 200);
    assert_eq!(records[1]["decision"], "deny");
    assert_eq!(records[2]["status"], 407);
    let stderr = String::from_utf8_lossy(&status.stderr);
    assert!(
        stderr.contains("listening on"),
        "operational logs go to stderr: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn audit_records_can_go_to_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let port = crate::rigs::ports::free_port();
    let yaml = format!(
        "listen: {{ proxy: 127.0.0.1:{port} }}\naudit: {{ path: {} }}\n",
        audit.display()
    );
    let (child, _f) = run_cordon(&yaml, port).await;
    let proxy = format!("http://127.0.0.1:{port}");
    let out = curl()
        .args([
            "-x",
            &proxy,
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "http://x.test/?q=secret",
        ])
        .timed_output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "407");
    let out = signal_and_wait(child, Signal::SIGTERM).await;
    assert!(out.stdout.is_empty(), "nothing on stdout when audit goes to a file");
    let text = std::fs::read_to_string(&audit).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains("\"kind\":\"checkpoint\"") && !l.contains("\"kind\":\"audit_start\""))
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    let rec: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(rec["status"], 407);
    assert_eq!(rec["host"], "x.test");
    assert!(!text.contains("secret"));
}

#[test]
fn ca_export_is_stable_and_rotate_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "ca: {{ dir: {} }}\nsandboxes:\n  - {{id: s, user: u, token_sha256: {}, policy: p}}\npolicies:\n  p:\n    allow:\n      - host: \"*.example.com\"\n",
        dir.path().join("cas").display(),
        hash("t")
    );
    let f = write_config(&yaml);
    let cfg = f.path().to_str().unwrap();
    let (code, first, err) = cordon(&["ca", "export", "--config", cfg, "--sandbox", "s"]);
    assert_eq!(code, 0, "{err}");
    assert!(first.starts_with("-----BEGIN CERTIFICATE-----"));
    let (_, again, _) = cordon(&["ca", "export", "--config", cfg, "--sandbox", "s"]);
    assert_eq!(first, again, "loaded, not regenerated");
    use std::os::unix::fs::PermissionsExt;
    let key = dir.path().join("cas/s/ca.key");
    assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(
        std::fs::metadata(dir.path().join("cas/s"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
    // The CA may sign only for the policy's names.
    let pem = dir.path().join("ca.pem");
    std::fs::write(&pem, &first).unwrap();
    if let Ok(o) = Command::new("openssl")
        .args(["x509", "-noout", "-text", "-in"])
        .arg(&pem)
        .timed_output()
    {
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            text.contains("Name Constraints") && text.contains("DNS:example.com"),
            "{text}"
        );
    }
    let (code, rotated, _) = cordon(&["ca", "rotate", "--config", cfg, "--sandbox", "s"]);
    assert_eq!(code, 0);
    assert_ne!(rotated, first);
    let (_, after, _) = cordon(&["ca", "export", "--config", cfg, "--sandbox", "s"]);
    assert_eq!(after, rotated);
    let (code, _, err) = cordon(&["ca", "export", "--config", cfg, "--sandbox", "nobody"]);
    assert_eq!(code, 2, "{err}");
}

/// Start `cordon run` on this config and wait until it listens on `port`.
async fn run_cordon(yaml: &str, port: u16) -> (std::process::Child, tempfile::NamedTempFile) {
    let f = write_config(yaml);
    let child = spawn_cordon(f.path(), port, &[]).await;
    (child, f)
}

#[test]
fn a_policy_file_that_is_missing_or_not_yaml_is_named_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "t").unwrap();
    let token = token.to_str().unwrap();
    // Neither or both of --policy and --policy-file: clap says which.
    let (code, _, err) = cordon(&[
        "sandbox",
        "set-policy",
        "sb-1",
        "--admin",
        "http://127.0.0.1:1",
        "--token-file",
        token,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--policy") && err.contains("--policy-file"), "{err}");
    let (code, _, err) = cordon(&[
        "sandbox",
        "create",
        "--user",
        "u",
        "--policy",
        "p",
        "--policy-file",
        "x.yaml",
        "--admin",
        "http://127.0.0.1:1",
        "--token-file",
        token,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot be used with"), "{err}");
    // A missing file, and a file that is not YAML (with its line and column); nothing reaches the (absent) API.
    let missing = dir.path().join("missing.yaml");
    let (code, _, err) = cordon(&[
        "sandbox",
        "set-policy",
        "sb-1",
        "--policy-file",
        missing.to_str().unwrap(),
        "--admin",
        "http://127.0.0.1:1",
        "--token-file",
        token,
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("missing.yaml") && !err.contains("connect"), "{err}");
    let broken = dir.path().join("broken.yaml");
    std::fs::write(&broken, "extends: web\nallow: [\n  - host: a\n").unwrap();
    let (code, _, err) = cordon(&[
        "sandbox",
        "set-policy",
        "sb-1",
        "--policy-file",
        broken.to_str().unwrap(),
        "--admin",
        "http://127.0.0.1:1",
        "--token-file",
        token,
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("broken.yaml:") && !err.contains("connect"), "{err}");
}
