//! `log.format: json` and `CORDON_LOG_FORMAT`, through the binary: every line cordon writes on stderr is a JSON
//! object with `level` and `message`, the fatal start-up errors too (the configuration's errors, a port in use,
//! a CA folder that is a file, a CA made for another policy, by `run` and by `check`; a failed `check --probe`),
//! whichever way json is chosen; the variable overrides the file, applies before the file is read (so a file
//! that is not YAML has its error in JSON too), and a value it does not know is an error that names it.

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::rigs::ports::free_port;
use crate::rigs::process::BIN;
use crate::rigs::wait::{TimedChild, Within};

/// Each non-empty line of `stderr` as a JSON object with string `level` and `message`; panics naming the line
/// that is not.
fn json_lines(stderr: &str) -> Vec<serde_json::Value> {
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}\nall of it:\n{stderr}"));
            assert!(
                v["timestamp"].is_string() && v["level"].is_string() && v["message"].is_string(),
                "no timestamp, level or message: {l}"
            );
            v
        })
        .collect();
    assert!(!lines.is_empty(), "nothing on stderr");
    lines
}

/// `cordon ARGS` with `env`: (exit code, stderr).
fn cordon_with(args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let out = Command::new(BIN)
        .args(args)
        .env_remove("CORDON_CONFIG")
        .env_remove("CORDON_LOG_FORMAT")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .timed_output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// One way of failing to start: the configuration's text (without a `log:` section) and what the ERROR line says.
struct Failure {
    what: &'static str,
    yaml: String,
    says: String,
    /// Whether the file is YAML enough to declare its own `log.format`.
    parses: bool,
}

#[test]
fn fatal_start_up_errors_are_json_lines_whichever_way_json_is_chosen() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_port = busy.local_addr().unwrap().port();
    let ca_file = dir.path().join("ca-is-a-file");
    std::fs::write(&ca_file, "not a folder").unwrap();
    let base = |proxy: u16| format!("listen: {{ proxy: \"127.0.0.1:{proxy}\" }}\naudit: {{ path: {d}/audit.jsonl }}\n");
    let failures = [
        Failure {
            what: "not YAML",
            yaml: "listen: { proxy: \"127.0.0.1:1\"\n".into(),
            says: "while parsing a flow mapping".into(),
            parses: false,
        },
        Failure {
            what: "unknown key",
            yaml: format!(
                "{}ca: {{ dir: {d}/cas }}\ntimeouts: {{ conect: 5s }}\n",
                base(free_port())
            ),
            says: "timeouts: unknown field `conect`".into(),
            parses: true,
        },
        Failure {
            what: "port in use",
            yaml: format!("{}ca: {{ dir: {d}/cas }}\n", base(busy_port)),
            says: format!("cannot listen on 127.0.0.1:{busy_port} (listen.proxy)"),
            parses: true,
        },
        Failure {
            what: "CA folder that is a file",
            yaml: format!("{}ca: {{ dir: {} }}\n", base(free_port()), ca_file.display()),
            says: format!("ca.dir {} is not a folder", ca_file.display()),
            parses: true,
        },
    ];
    for (i, f) in failures.iter().enumerate() {
        // json by the environment, over a file that asks for text (when it can ask at all) ...
        let by_env = dir.path().join(format!("env-{i}.yaml"));
        let text_log = if f.parses { "log: { format: text }\n" } else { "" };
        std::fs::write(&by_env, format!("{text_log}{}", f.yaml)).unwrap();
        // ... and by the file itself.
        let by_file = dir.path().join(format!("file-{i}.yaml"));
        std::fs::write(&by_file, format!("log: {{ format: json }}\n{}", f.yaml)).unwrap();
        let mut ways = vec![(
            "CORDON_LOG_FORMAT=json",
            by_env.clone(),
            vec![("CORDON_LOG_FORMAT", "json")],
        )];
        if f.parses {
            ways.push(("log.format: json", by_file, vec![]));
        }
        for (way, config, env) in ways {
            let (code, stderr) = cordon_with(&["run", "--config", config.to_str().unwrap()], &env);
            assert_ne!(code, 0, "{} ({way}) started:\n{stderr}", f.what);
            let lines = json_lines(&stderr);
            assert!(
                lines
                    .iter()
                    .any(|l| l["level"] == "ERROR" && l["message"].as_str().unwrap().contains(&f.says)),
                "{} ({way}): no ERROR saying {:?} in:\n{stderr}",
                f.what,
                f.says
            );
        }
        // CORDON_LOG_FORMAT=text overrides a file that asks for json: the lines people read, as before.
        if f.parses {
            let by_file = dir.path().join(format!("file-{i}.yaml"));
            let (code, stderr) = cordon_with(
                &["run", "--config", by_file.to_str().unwrap()],
                &[("CORDON_LOG_FORMAT", "text")],
            );
            assert_ne!(code, 0);
            assert!(stderr.contains(&f.says), "{stderr}");
            assert!(
                stderr
                    .lines()
                    .all(|l| serde_json::from_str::<serde_json::Value>(l).is_err()),
                "{} with CORDON_LOG_FORMAT=text:\n{stderr}",
                f.what
            );
        }
    }
    // A configuration error has its place as fields: file, line, column, the path of the value.
    let unknown = dir.path().join("file-1.yaml");
    let (_, stderr) = cordon_with(&["run", "--config", unknown.to_str().unwrap()], &[]);
    let first = &json_lines(&stderr)[0];
    assert_eq!(first["file"], unknown.display().to_string(), "{first}");
    assert_eq!(first["line"], 5, "{first}");
    assert!(first["column"].is_u64(), "{first}");
    let invalid = dir.path().join("invalid.yaml");
    std::fs::write(
        &invalid,
        "log: { format: json }\npolicies: { web: { allow: [ { host: \"*github.com\" } ] } }\n",
    )
    .unwrap();
    let (_, stderr) = cordon_with(&["run", "--config", invalid.to_str().unwrap()], &[]);
    assert_eq!(json_lines(&stderr)[0]["path"], "policies.web.allow[0].host", "{stderr}");
    // `cordon check` writes its errors the same way (its summary on stdout stays a table).
    let (code, stderr) = cordon_with(&["check", "--config", unknown.to_str().unwrap()], &[]);
    assert_eq!(code, 2);
    assert!(
        json_lines(&stderr)
            .iter()
            .any(|l| l["message"].as_str().unwrap().contains("conect"))
    );
    drop(busy);
}

#[test]
fn a_log_format_variable_cordon_does_not_know_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("cordon.yaml");
    std::fs::write(&config, format!("listen: {{ proxy: \"127.0.0.1:{}\" }}\n", free_port())).unwrap();
    for command in ["run", "check"] {
        let (code, stderr) = cordon_with(
            &[command, "--config", config.to_str().unwrap()],
            &[("CORDON_LOG_FORMAT", "JSON")],
        );
        assert_eq!(code, 2, "{stderr}");
        assert_eq!(
            stderr.trim(),
            "cordon: CORDON_LOG_FORMAT=\"JSON\" is not a log format; write text or json",
            "{command}"
        );
    }
}

/// Start `cordon run` on `config` with `env`, wait (up to 20 s) for the stderr line that says it listens on
/// `port`, stop it, and give every line it wrote.
fn run_until_listening(config: &std::path::Path, port: u16, env: &[(&str, &str)]) -> String {
    let mut child = Command::new(BIN)
        .args(["run", "--config"])
        .arg(config)
        .env_remove("CORDON_LOG_FORMAT")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr).lines() {
            let line = line.unwrap();
            let _ = tx.send(line.clone());
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let needle = format!("listening on 127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.contains(&needle) => break,
            Ok(_) => {}
            Err(_) => {
                let _ = child.kill();
                let _ = child.timed_wait();
                panic!("cordon never said {needle:?}:\n{}", reader.join().unwrap());
            }
        }
    }
    child.kill().unwrap();
    child.timed_wait().unwrap();
    reader.join().unwrap()
}

#[test]
fn operational_logs_can_be_json_lines_for_a_log_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    for (format, env) in [("json", vec![]), ("text", vec![("CORDON_LOG_FORMAT", "json")])] {
        let port = free_port();
        let config = dir.path().join(format!("{format}.yaml"));
        std::fs::write(
            &config,
            format!(
                "listen: {{ proxy: \"127.0.0.1:{port}\" }}\naudit: {{ path: {d}/audit.log, chain: false }}\n\
                 ca: {{ dir: {d}/cas }}\nlog: {{ format: {format} }}\n"
            ),
        )
        .unwrap();
        let stderr = run_until_listening(&config, port, &env);
        let lines = json_lines(&stderr);
        assert!(
            lines
                .iter()
                .any(|l| l["message"].as_str().unwrap().contains(&format!("127.0.0.1:{port}"))),
            "{stderr}"
        );
        // The configuration's warnings, written before the operational log starts, too.
        assert!(
            lines
                .iter()
                .any(|l| l["level"] == "WARN" && l["message"].as_str().unwrap().contains("audit.chain")),
            "{stderr}"
        );
    }
    // A format cordon does not write is refused where it is written.
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "log: { format: yaml }\n").unwrap();
    let (code, err) = cordon_with(&["check", "--config", bad.to_str().unwrap()], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("log.format: \"yaml\" is not a log format; write text or json"),
        "{err}"
    );
}

#[test]
fn a_ca_made_for_another_policy_is_refused_in_json_by_run_and_by_check() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let port = free_port();
    let yaml = |host: &str| {
        format!(
            "listen: {{ proxy: \"127.0.0.1:{port}\" }}\naudit: {{ path: {d}/audit.jsonl }}\nca: {{ dir: {d}/cas }}\n\
             sandboxes:\n  - {{ id: demo, user: u, token_sha256: {}, policy: web }}\n\
             policies:\n  web:\n    allow:\n      - {{ host: {host} }}\n",
            crate::rigs::client::hash("tok")
        )
    };
    let first = dir.path().join("first.yaml");
    std::fs::write(&first, yaml("first.test")).unwrap();
    let (code, err) = cordon_with(
        &["ca", "export", "--sandbox", "demo", "--config", first.to_str().unwrap()],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    // The same CA folder, for a policy that intercepts another host.
    let second = dir.path().join("second.yaml");
    std::fs::write(&second, yaml("second.test")).unwrap();
    for (command, expected) in [("run", 2), ("check", 2)] {
        let (code, stderr) = cordon_with(
            &[command, "--config", second.to_str().unwrap()],
            &[("CORDON_LOG_FORMAT", "json")],
        );
        assert_eq!(code, expected, "{command}: {stderr}");
        let lines = json_lines(&stderr);
        assert!(
            lines
                .iter()
                .any(|l| l["level"] == "ERROR" && l["message"].as_str().unwrap().contains("second.test")),
            "{command}: no ERROR naming the host the CA cannot sign for:\n{stderr}"
        );
    }
}

#[test]
fn a_failed_probe_is_reported_in_json_lines_by_check() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let (port, down) = (free_port(), free_port());
    let yaml = format!(
        "listen: {{ proxy: \"127.0.0.1:{port}\" }}\naudit: {{ path: {d}/audit.jsonl }}\nca: {{ dir: {d}/cas }}\n\
         sandboxes:\n  - {{ id: demo, user: u, token_sha256: {}, policy: web }}\n\
         credentials:\n  idp:\n    source: {{ oauth2: {{ token_url: \"http://127.0.0.1:{down}/token\", client_id: c, client_secret: {{ env: PROBE_JSON_SECRET }} }} }}\n    \
         bind: {{ hosts: [a.test] }}\n    inject: {{ header: Authorization, value: \"Bearer {{secret}}\" }}\n\
         policies:\n  web:\n    allow:\n      - {{ host: a.test }}\n    credentials: [idp]\n",
        crate::rigs::client::hash("tok")
    );
    let config = dir.path().join("cordon.yaml");
    std::fs::write(&config, yaml).unwrap();
    let (code, stderr) = cordon_with(
        &["check", "--probe", "--config", config.to_str().unwrap()],
        &[("CORDON_LOG_FORMAT", "json"), ("PROBE_JSON_SECRET", "s")],
    );
    assert_eq!(
        code, 1,
        "a token endpoint that does not answer fails the probe: {stderr}"
    );
    // Every line is JSON, the probe's verdict too.
    let lines = json_lines(&stderr);
    assert!(
        lines.iter().any(|l| l["level"] == "ERROR"
            && l["message"]
                .as_str()
                .unwrap()
                .contains("1 credential(s) cannot be supplied now")),
        "no ERROR line for the failed probe:\n{stderr}"
    );
}
