//! The examples of `--help` (issue 41, item 4): every visible command has some, shown by `-h`, `--help` and
//! `cordon man`; the examples that need neither a running cordon nor the network are run as printed (by `sh -c`,
//! in a fresh folder, against the embedded configuration), each checked for what it says it does; and every
//! example is run by some test: here, `json.rs` (the sandbox commands' output), `examples_live.rs` (`cordon run`
//! and the sandbox commands), `examples_held.rs` (approvals and previews), `examples_system.rs` (completions and
//! manual pages) or `../jail/examples.rs` (the jail's).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::rigs::process::Signal;
use crate::rigs::process::{BIN, cordon};
use crate::rigs::wait::Within;

/// The commands listed under `Commands:` in `help`, `help` itself aside.
fn listed(help: &str) -> Vec<String> {
    let Some((_, after)) = help.split_once("\nCommands:\n") else {
        return Vec::new();
    };
    after
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(str::to_owned)
        .collect()
}

/// Every visible command's path below `cordon`, walked through the binary's `--help` (`""` is `cordon`).
fn paths() -> Vec<String> {
    let mut all = Vec::new();
    let mut todo = vec![String::new()];
    while let Some(path) = todo.pop() {
        let (code, help, err) = cordon(&args(&path, "--help"));
        assert_eq!(code, 0, "{path}: {err}");
        for name in listed(&help) {
            todo.push(format!("{path} {name}").trim().to_owned());
        }
        all.push(path);
    }
    all.sort();
    all
}

/// `PATH... FLAG` as arguments.
fn args<'a>(path: &'a str, flag: &'a str) -> Vec<&'a str> {
    path.split_whitespace().chain([flag]).collect()
}

/// The lines of the `Examples:` block of `help` (the end of it), unindented.
fn examples(help: &str) -> Vec<String> {
    let Some((_, block)) = help.split_once("\nExamples:\n") else {
        return Vec::new();
    };
    block.lines().map(|l| l.trim().to_owned()).collect()
}

#[test]
fn every_visible_command_has_examples_in_its_help_and_manual_page() {
    let paths = paths();
    assert!(paths.len() > 35, "{paths:?}");
    for path in &paths {
        for flag in ["--help", "-h"] {
            let (_, help, _) = cordon(&args(path, flag));
            let lines = examples(&help);
            let own = format!("cordon {path}").trim().to_owned();
            assert!(
                lines.iter().any(|l| format!("{l} ").contains(&format!("{own} "))),
                "`{own} {flag}` has no example of `{own}`:\n{help}"
            );
            assert!(
                lines.iter().any(|l| l.starts_with("# ")),
                "{own} {flag}: no example says what it does"
            );
        }
        let mut man = vec!["man"];
        man.extend(path.split_whitespace());
        let (code, page, err) = cordon(&man);
        assert_eq!(code, 0, "man {path}: {err}");
        let section = page.split_once(".SH EXAMPLES\n").map(|(_, s)| s).unwrap_or_default();
        assert!(
            section.lines().any(|l| l.starts_with("\\fB") && l.contains("cordon")),
            "man {path}: no EXAMPLES section:\n{page}"
        );
    }
}

/// The sources of the tests that run the examples as printed (each through [`shown`], which checks the line is
/// printed, then `sh -c`).
const RUNNERS: &[&str] = &[
    include_str!("examples.rs"),
    include_str!("examples_held.rs"),
    include_str!("examples_live.rs"),
    include_str!("examples_system.rs"),
    include_str!("json.rs"),
    include_str!("suggest.rs"),
    include_str!("policy_examples.rs"),
    include_str!("../jail/examples.rs"),
    include_str!("../access/requests.rs"),
    include_str!("../oauth_refresh/admin.rs"),
];

/// No example is left out of the tests: every command line of every `Examples:` block is written, as a Rust
/// string, in one of the [`RUNNERS`] (a new example fails here until a test runs it).
#[test]
fn every_example_line_is_in_a_test_that_runs_it() {
    let runners = RUNNERS.concat();
    let mut missing = Vec::new();
    for path in paths() {
        let (_, help, _) = cordon(&args(&path, "--help"));
        for line in examples(&help) {
            if line.is_empty() || line.starts_with("# ") {
                continue;
            }
            let literal = format!("{line:?}");
            if !runners.contains(&literal[1..literal.len() - 1]) {
                missing.push(format!("cordon {path}: {line}"));
            }
        }
    }
    assert!(missing.is_empty(), "examples no test runs:\n{}", missing.join("\n"));
}

/// Run `line` as printed with `sh -c` in `dir`, the binary first on PATH, none of the caller's cordon variables;
/// then `after` in the same shell (to look at what the line did). (exit code of the whole, stdout, stderr)
pub(super) fn run_in(dir: &Path, line: &str, after: &str, env: &[(&str, &str)]) -> (i32, String, String) {
    let bin = Path::new(BIN).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let script = if after.is_empty() {
        line.to_owned()
    } else {
        format!("{line}\n{after}")
    };
    let out = Command::new("sh")
        .args(["-c", &script])
        .current_dir(dir)
        .env("PATH", path)
        .env("CORDON_STATE_DIR", dir.join(".cordon-state"))
        .env_remove("CORDON_CONFIG")
        .env_remove("CORDON_ADMIN_TOKEN")
        .env_remove("CORDON_ADMIN_URL")
        .env_remove("CORDON_LOG_FORMAT")
        .envs(env.iter().copied())
        .timed_output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `text` (a line, or several in a row) is printed among the examples in the help of `path` (so what runs is
/// what is printed).
pub(crate) fn shown(path: &str, text: &str) {
    let (_, help, _) = cordon(&args(path, "--help"));
    let printed = examples(&help);
    let wanted: Vec<&str> = text.lines().collect();
    assert!(
        printed
            .windows(wanted.len())
            .any(|w| w.iter().zip(&wanted).all(|(a, b)| a == b)),
        "`{text}` is not an example of `cordon {path}`:\n{help}"
    );
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn the_offline_examples_run_as_printed_against_the_embedded_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let env = [("GITHUB_TOKEN", "ghp-example-not-real")];
    let run = |path: &str, line: &str, after: &str| {
        shown(path, line);
        let (code, out, err) = run_in(d, line, after, &env);
        (code, out, format!("{line}: {err}"))
    };

    let (code, out, err) = run("check", "cordon check", "");
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("config/cordon.yaml (embedded): ok\n"), "{out}");
    let (code, out, err) = run("check", "cordon check --json --probe", "");
    assert_eq!(code, 0, "{err}");
    let summary = json(&out);
    assert_eq!(summary["source"], "config/cordon.yaml (embedded)");
    assert_eq!(summary["sandboxes"][0]["id"], "demo");
    assert_eq!(summary["probe"], serde_json::json!([]));

    // Allowed by the policy; whether the guard lets it through depends on this machine's DNS.
    let (code, out, err) = run("explain", "cordon explain --sandbox demo http://example.com/", "");
    assert!(code == 0 || code == 1, "{err}");
    assert!(out.contains("policy   allow by rule 0"), "{out}");
    let line = "cordon explain --sandbox demo --method POST --json https://api.github.com/repos/acme/app/issues";
    let (code, out, err) = run("explain", line, "");
    assert_eq!(code, 1, "{err}");
    assert_eq!(json(&out)["verdict"], "deny");

    let (code, _, err) = run("ca export", "cordon ca export --sandbox demo > demo-ca.pem", "");
    assert_eq!(code, 0, "{err}");
    let first = std::fs::read_to_string(d.join("demo-ca.pem")).unwrap();
    assert!(first.starts_with("-----BEGIN CERTIFICATE-----"), "{first}");
    let (code, _, err) = run("ca rotate", "cordon ca rotate --sandbox demo > demo-ca.pem", "");
    assert_eq!(code, 0, "{err}");
    let rotated = std::fs::read_to_string(d.join("demo-ca.pem")).unwrap();
    assert!(rotated.starts_with("-----BEGIN CERTIFICATE-----") && rotated != first);

    let (code, _, err) = run("vault set", "printf %s \"$GITHUB_TOKEN\" | cordon vault set github", "");
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run("vault list", "cordon vault list", "");
    assert_eq!((code, out.as_str()), (0, "github\n"), "{err}");
    let (code, out, err) = run("vault list", "cordon vault list --json", "");
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out), serde_json::json!({"secrets": ["github"]}));
    let (code, out, err) = run("vault rm", "cordon vault rm github", "cordon vault list");
    assert_eq!((code, out.as_str()), (0, ""), "{err}");

    // The embedded policy uses no credentials: nothing to print, as lines or as JSON.
    let (code, out, err) = run("placeholders", "cordon placeholders --sandbox demo", "");
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    let (code, out, err) = run("placeholders", "cordon placeholders --sandbox demo --json", "");
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out), serde_json::json!({}));

    let (code, out, err) = run("reasons", "cordon reasons", "");
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("CODE ") && out.contains("\nno_rule "), "{out}");
    let (code, out, err) = run("reasons", "cordon reasons --markdown", "");
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("| answer | `x-cordon-reason` | meaning |\n"), "{out}");
    let (code, out, err) = run("reasons", "cordon reasons no_rule", "");
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("no_rule  403  no rule of the policy allows the host\nwhat to do: Run `cordon explain"),
        "{out}"
    );
    let (code, out, err) = run("reasons", "cordon reasons --json", "");
    assert_eq!(code, 0, "{err}");
    let reasons = json(&out);
    let no_rule = reasons["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["code"] == "no_rule")
        .unwrap();
    assert_eq!(
        (&no_rule["status"], &no_rule["answer"]),
        (&Value::from(403), &Value::from("403"))
    );

    let (code, _, err) = run("config schema", "cordon config schema > cordon.schema.json", "");
    assert_eq!(code, 0, "{err}");
    let schema = json(&std::fs::read_to_string(d.join("cordon.schema.json")).unwrap());
    assert!(
        schema["properties"]["sandboxes"].is_object(),
        "{}",
        &schema.to_string()[..200]
    );

    // The demo token's hash is the one config/cordon.yaml holds.
    let (code, out, err) = run("token hash", "printf %s demo-token | cordon token hash", "");
    assert_eq!(code, 0, "{err}");
    let embedded = include_str!("../../../config/cordon.yaml");
    assert!(embedded.contains(&format!("token_sha256: {}", out.trim())), "{out}");
    let (code, out, err) = run("token hash", "openssl rand -hex 24 | tee token | cordon token hash", "");
    assert_eq!(code, 0, "{err}");
    let token = std::fs::read_to_string(d.join("token")).unwrap();
    assert_eq!(token.trim().len(), 48, "{token}");
    assert_eq!(out.trim(), crate::rigs::client::hash(token.trim()));
}

/// The audit examples, on the log of a real run whose key is put where the embedded configuration keeps it
/// (`state/audit-key` in the state folder the examples run with).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_examples_verify_a_real_log() {
    let (signed, port, config) = crate::rigs::audit::signed_config("300ms");
    crate::rigs::audit::run_once(&config, port, 3, Signal::SIGTERM).await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join(".cordon-state/state")).unwrap();
    std::fs::copy(signed.path().join("audit-key"), d.join(".cordon-state/state/audit-key")).unwrap();
    std::fs::copy(signed.path().join("audit.jsonl"), d.join("audit.jsonl")).unwrap();
    let run = |path: &str, line: &str| {
        shown(path, line);
        run_in(d, line, "", &[])
    };
    let (code, key, err) = run("audit public-key", "cordon audit public-key");
    assert_eq!(code, 0, "{err}");
    assert_eq!(key.trim().len(), 64, "{key}");
    let (code, _, err) = run("audit public-key", "cordon audit public-key > audit-key.pub");
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(d.join("audit-key.pub")).unwrap(), key);
    let line = "cordon audit verify --public-key \"$(cordon audit public-key)\" audit.jsonl";
    let (code, out, err) = run("audit verify", line);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("verdict  intact"), "{out}");
    let (code, out, err) = run("audit verify", "cordon audit verify --no-signatures audit.jsonl");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("verdict  intact"), "{out}");
}

/// Requests through the cordon at `port` that each leave one record (407: no credentials).
fn unauthenticated(port: u16, n: usize) {
    for i in 0..n {
        let out = crate::rigs::process::curl()
            .args([
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "-x",
                &format!("http://127.0.0.1:{port}"),
            ])
            .arg(format!("http://host-{i}.test/"))
            .timed_output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "407");
    }
}

/// The rotated-files example, on a log an external logrotate turned (renamed to `audit.jsonl.1`, SIGUSR1,
/// compressed as logrotate's `compress` does) in the middle of a real run: the two files verify given newest
/// first, as printed, with the key kept in a file by the `audit public-key` example, and the result is JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rotated_files_example_verifies_a_log_turned_by_logrotate() {
    let (signed, port, config) = crate::rigs::audit::signed_config("300ms");
    let s = signed.path();
    let child = crate::rigs::process::spawn_cordon(&config, port, &[]).await;
    unauthenticated(port, 2);
    std::fs::rename(s.join("audit.jsonl"), s.join("audit.jsonl.1")).unwrap();
    crate::rigs::process::signal(child.id(), Signal::SIGUSR1).unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    unauthenticated(port, 3);
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    let out = crate::rigs::process::signal_and_wait(child, Signal::SIGTERM).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let gz = Command::new("gzip")
        .arg(s.join("audit.jsonl.1"))
        .timed_status()
        .unwrap();
    assert!(gz.success(), "gzip audit.jsonl.1");

    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join(".cordon-state/state")).unwrap();
    std::fs::copy(s.join("audit-key"), d.join(".cordon-state/state/audit-key")).unwrap();
    for file in ["audit.jsonl", "audit.jsonl.1.gz"] {
        std::fs::copy(s.join(file), d.join(file)).unwrap();
    }
    let run = |path: &str, line: &str| {
        shown(path, line);
        run_in(d, line, "", &[])
    };
    let (code, _, err) = run("audit public-key", "cordon audit public-key > audit-key.pub");
    assert_eq!(code, 0, "{err}");
    let line = "cordon audit verify --public-key \"$(cat audit-key.pub)\" --json audit.jsonl audit.jsonl.1.gz";
    let (code, out, err) = run("audit verify", line);
    assert_eq!(code, 0, "{out}{err}");
    let report = json(&out);
    assert_eq!(report["verdict"], "intact", "{report}");
    // Put in order, oldest first, and no line missing: the 5 requests' records are in the two files.
    assert_eq!(
        report["files"],
        serde_json::json!(["audit.jsonl.1.gz", "audit.jsonl"]),
        "{report}"
    );
    assert_eq!(report["tampering"], serde_json::json!([]), "{report}");
    assert!(report["signed_checkpoints"].as_u64().unwrap() >= 2, "{report}");
}
