//! `cordon policy suggest` through the binary: a sandbox runs under a policy in report mode that allows nothing,
//! real curl traffic (HTTPS, intercepted with the sandbox's CA, and plain HTTP, a metadata address among it)
//! leaves its audit records; the suggested policy then passes `cordon check`, and both `cordon explain` and live
//! traffic under it allow every request seen and refuse the ones not seen (another method, path or host). Bad
//! input is refused, saying what and where.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::rigs::client::hash;
use crate::rigs::ports::free_port;
use crate::rigs::process::{BIN, Signal, curl, signal_and_wait, spawn_cordon};
use crate::rigs::tls::{https_upstream, test_ca};
use crate::rigs::upstreams::upstream;
use crate::rigs::wait::Within;

/// The configuration: sandbox `demo` under `policies` (YAML of the `policies:` section's body, indented 2).
fn config(d: &Path, port: u16, policy: &str, policies: &str) -> String {
    format!(
        r#"
listen: {{ proxy: 127.0.0.1:{port} }}
network:
  allow_cidrs: ["127.0.0.0/8"]
  hosts: {{ api.learn.test: 127.0.0.2, pkgs.learn.test: 127.0.0.3 }}
ca: {{ dir: {d}/cas }}
upstream: {{ extra_roots: [{d}/upstream-ca.pem] }}
audit: {{ path: {d}/audit.jsonl }}
sandboxes:
  - {{ id: demo, user: alice, token_sha256: {h}, policy: {policy} }}
policies:
{policies}
"#,
        d = d.display(),
        h = hash("tok-demo"),
    )
}

/// `method url` through the proxy as sandbox `demo`: the status curl got (the CONNECT's when it refused).
fn send(d: &Path, port: u16, method: &str, url: &str) -> u16 {
    let mut c = curl();
    c.args(["-s", "--path-as-is"])
        .args(["-x", &format!("http://demo:tok-demo@127.0.0.1:{port}")])
        .arg("--cacert")
        .arg(d.join("trust.pem"))
        .args(["-X", method, url]);
    let r = crate::rigs::curl::run(c);
    if r.status == 0 { r.connect } else { r.status }
}

fn suggest(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(["policy", "suggest"])
        .args(args)
        .timed_output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_report_mode_run_teaches_the_narrowest_policy_that_allows_what_was_seen() {
    let ca = test_ca("upstream test CA");
    let tls = https_upstream("127.0.0.2", ca.server_config(&["api.learn.test"])).await;
    let plain = upstream("127.0.0.3").await;
    let (u, p) = (tls.addr.port(), plain.addr.port());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("upstream-ca.pem"), &ca.pem).unwrap();
    let port = free_port();
    let file = d.join("cordon.yaml");
    let learning = "  learning:\n    mode: report\n    allow: []\n";
    std::fs::write(&file, config(d, port, "learning", learning)).unwrap();
    let child = spawn_cordon(&file, port, &[]).await;
    let out = Command::new(BIN)
        .args(["ca", "export", "--sandbox", "demo", "--config"])
        .arg(&file)
        .timed_output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::write(d.join("trust.pem"), &out.stdout).unwrap();

    // What the agent did, all let through by report mode (the metadata address never is).
    let seen = [
        ("GET", format!("https://api.learn.test:{u}/v1/models")),
        ("POST", format!("https://api.learn.test:{u}/v1/messages")),
        ("GET", format!("http://pkgs.learn.test:{p}/simple/requests/")),
        ("HEAD", format!("http://pkgs.learn.test:{p}/simple/requests/")),
        ("GET", format!("http://pkgs.learn.test:{p}/files/requests-2.32.tar.gz")),
    ];
    for (method, url) in &seen {
        assert_eq!(send(d, port, method, url), 200, "{method} {url} in report mode");
    }
    assert_eq!(send(d, port, "GET", "http://169.254.169.254/latest/meta-data/"), 403);
    let stopped = signal_and_wait(child, Signal::SIGTERM).await;
    assert!(stopped.status.success());

    // The suggestion: YAML that names each host, method and path seen, and the refusal it left out. (A copy: the
    // run under the learnt policy below appends its own records, refusals included, to the audit file.)
    let audit = d.join("learnt-from.jsonl");
    std::fs::copy(d.join("audit.jsonl"), &audit).unwrap();
    let (code, yaml, err) = suggest(&[audit.to_str().unwrap(), "--sandbox", "demo", "--name", "learnt"]);
    assert_eq!(code, 0, "{yaml}{err}");
    assert!(yaml.contains("metadata_address (1)"), "{yaml}");
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&yaml).unwrap();
    let rules = doc["policies"]["learnt"]["allow"].as_sequence().unwrap();
    assert_eq!(
        rules.len(),
        4,
        "GET and POST differ in paths, as HEAD and GET do on pkgs: {yaml}"
    );
    assert!(!yaml.contains("169.254"), "{yaml}");

    // It passes `cordon check`, enforced.
    let policies = yaml
        .lines()
        .skip_while(|l| !l.starts_with("policies:"))
        .skip(1)
        .map(|l| format!("{l}\n"))
        .collect::<String>();
    let enforced = d.join("enforced.yaml");
    std::fs::write(&enforced, config(d, port, "learnt", &policies)).unwrap();
    let out = Command::new(BIN)
        .args(["check", "--config"])
        .arg(&enforced)
        .timed_output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // explain allows every request seen, and refuses what was not seen.
    let explain = |method: &str, url: &str| {
        let out = Command::new(BIN)
            .args(["explain", "--json", "--sandbox", "demo", "--method", method, "--config"])
            .arg(&enforced)
            .arg(url)
            .timed_output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        (
            out.status.code(),
            v["exchanges"].as_array().unwrap().last().unwrap()["reason"].clone(),
        )
    };
    for (method, url) in &seen {
        assert_eq!(explain(method, url).0, Some(0), "{method} {url}");
    }
    let unseen = [
        (
            "DELETE",
            format!("https://api.learn.test:{u}/v1/models"),
            "method_not_allowed",
        ),
        // A method seen, at a path it was not seen at.
        (
            "GET",
            format!("https://api.learn.test:{u}/v1/messages"),
            "path_not_allowed",
        ),
        (
            "POST",
            format!("https://api.learn.test:{u}/v1/models"),
            "path_not_allowed",
        ),
        (
            "GET",
            format!("https://api.learn.test:{u}/v1/other"),
            "path_not_allowed",
        ),
        (
            "GET",
            format!("http://pkgs.learn.test:{p}/simple/other/"),
            "path_not_allowed",
        ),
        ("GET", format!("http://other.learn.test:{p}/"), "no_rule"),
    ];
    for (method, url, reason) in &unseen {
        assert_eq!(explain(method, url), (Some(1), Value::from(*reason)), "{method} {url}");
    }

    // And live traffic under it does as explain said.
    let child = spawn_cordon(&enforced, port, &[]).await;
    for (method, url) in &seen {
        assert_eq!(
            send(d, port, method, url),
            200,
            "{method} {url} under the learnt policy"
        );
    }
    for (method, url, _) in &unseen {
        assert_eq!(
            send(d, port, method, url),
            403,
            "{method} {url} under the learnt policy"
        );
    }
    signal_and_wait(child, Signal::SIGTERM).await;

    // The examples of `cordon policy suggest --help`, as printed, on this log.
    let examples = tempfile::tempdir().unwrap();
    std::fs::copy(&audit, examples.path().join("audit.jsonl")).unwrap();
    let example = |path: &str, line: &str| {
        crate::cli::examples::shown(path, line);
        crate::cli::examples::run_in(examples.path(), line, "", &[])
    };
    for path in ["policy", "policy suggest"] {
        let (code, out, err) = example(path, "cordon policy suggest --sandbox demo audit.jsonl");
        assert_eq!(code, 0, "{err}");
        // The same policy as above, under the default name.
        assert_eq!(out.replace("  suggested:", "  learnt:"), yaml, "{err}");
    }
    let (code, out, err) = example(
        "policy suggest",
        "cordon policy suggest --sandbox demo --paths 2 --json audit.jsonl",
    );
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let globs: Vec<&str> = v["policies"]["suggested"]["allow"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["paths"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()))
        .collect();
    assert!(
        globs.contains(&"/simple/requests/**") && globs.contains(&"/v1/models"),
        "{globs:?}"
    );

    // --json says the same, and a gzip'd (rotated) file reads as the plain one.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&std::fs::read(&audit).unwrap()).unwrap();
    let gz_path = d.join("audit.jsonl.1.gz");
    std::fs::write(&gz_path, gz.finish().unwrap()).unwrap();
    let (code, json, err) = suggest(&[gz_path.to_str().unwrap(), "--sandbox", "demo", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["policies"]["suggested"]["allow"].as_array().unwrap().len(), 4, "{v}");
    assert_eq!(v["left_out"]["metadata_address"], 1, "{v}");
}

#[test]
fn bad_input_is_refused_saying_what_and_where() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let line = |id: &str| {
        format!(
            "{{\"sandbox\":\"{id}\",\"kind\":\"http\",\"decision\":\"deny\",\"reason\":\"no_rule\",\"host\":\"a.test\",\"port\":80,\"method\":\"GET\",\"path\":\"/\"}}\n"
        )
    };
    let two = d.join("two.jsonl");
    std::fs::write(&two, format!("{}{}", line("s"), line("t"))).unwrap();
    let (code, _, err) = suggest(&[two.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("2 sandboxes (s, t): name one with --sandbox"), "{err}");
    let (code, out, _) = suggest(&[two.to_str().unwrap(), "--sandbox", "t"]);
    assert_eq!(code, 0);
    assert!(out.contains("a.test"), "{out}");
    // A sandbox with nothing to learn: exit 1, and no rule.
    let (code, out, _) = suggest(&[two.to_str().unwrap(), "--sandbox", "nobody"]);
    assert_eq!(code, 1, "{out}");

    let broken = d.join("broken.jsonl");
    std::fs::write(&broken, format!("{}{{not json\n", line("s"))).unwrap();
    let (code, _, err) = suggest(&[broken.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("broken.jsonl:2: not a JSON record"), "{err}");

    let missing = d.join("missing.jsonl");
    let (code, _, err) = suggest(&[missing.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("missing.jsonl: No such file"), "{err}");

    let (code, _, err) = suggest(&[two.to_str().unwrap(), "--paths", "deep"]);
    assert_eq!(code, 2);
    assert!(err.contains("`exact`, `any` or a number"), "{err}");
}
