//! The examples of `--help` that start cordon or talk to one, run as printed (by `sh -c`) on a machine of their
//! own ([`Isolated`]: network, mount and PID namespaces, where the embedded configuration's fixed ports meet no
//! other test and `example.com` is a web server of the namespace's): `cordon` and `cordon run` on the embedded
//! configuration with a request through them, the audit lines a run wrote verified, `check --strict` of a copy,
//! the sandbox commands against the running cordon's admin API as the embedded configuration names it, and the
//! approvals of held requests and the previews against a cordon whose configuration (`CORDON_CONFIG`) has an
//! `action: ask` rule and previews. Each is checked for what its `# ` line says it does.

use std::path::Path;

use serde_json::Value;

use super::examples::shown;
use crate::rigs::isolated::{EXAMPLE_PAGE, Isolated, Ran};

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Run `text`, an example of `path` (checked to be printed there), in `dir` inside `m`; it must exit 0.
fn ok(m: &Isolated, dir: &Path, path: &str, text: &str, env: &[(&str, &str)]) -> Ran {
    shown(path, text);
    let ran = m.run(dir, text, env, "");
    assert_eq!(ran.code, 0, "{text}:\n{}{}", ran.out, ran.err);
    ran
}

#[test]
fn cordon_run_check_and_the_sandbox_commands_run_as_printed() {
    let Some(m) = Isolated::new("cli::examples_live") else {
        return;
    };
    let work = m.folder("work");
    let state = m.path().join("state");
    let home = m.folder("home");
    let (state_s, home_s) = (state.display().to_string(), home.display().to_string());
    let env = [("CORDON_STATE_DIR", state_s.as_str()), ("HOME", home_s.as_str())];

    // `cordon`: the proxy on the embedded configuration; a request through it gets example.com's answer.
    shown("", "cordon");
    let server = m.spawn(&work, "cordon", &env);
    assert!(m.listening(3128) && m.listening(9090), "{}", server.stderr());
    let curl = "curl -x http://demo:demo-token@127.0.0.1:3128 http://example.com/";
    let ran = ok(&m, &work, "", curl, &env);
    assert_eq!(ran.out, EXAMPLE_PAGE, "{}", ran.err);
    assert_eq!(
        m.served().matches("\"GET / HTTP/1.1\" 200").count(),
        1,
        "{}",
        m.served()
    );
    // Allowed, exit 0 (the explain examples elsewhere run where example.com may not resolve).
    let explain = "cordon explain --sandbox demo http://example.com/";
    shown("explain", explain);
    let ran = ok(&m, &work, "", explain, &env);
    assert!(
        ran.out.contains("policy   allow by rule 0") && ran.out.contains("verdict  ALLOW"),
        "{}",
        ran.out
    );

    // The sandbox commands find the admin API and its token through the embedded configuration.
    let lines = "cordon sandbox create --user alice --policy default --id agent-1 --ttl 2h\ncordon sandbox list\n\
                 cordon sandbox revoke agent-1";
    let ran = ok(&m, &work, "sandbox", lines, &env);
    let (created, rest) = ran.out.split_once("\n}\n").unwrap();
    assert_eq!(json(&format!("{created}\n}}"))["id"], "agent-1", "{}", ran.out);
    assert!(
        rest.lines().any(|l| l.starts_with("agent-1 ") && l.contains(" alice ")),
        "{}",
        ran.out
    );
    let revoked = json(&rest[rest.find('{').unwrap()..]);
    assert!(revoked["revoked_at"].is_string(), "{revoked}");
    // Its own policy from a file, then back to the file's.
    let line = "cordon sandbox create --user alice --policy default --id agent-1 --ttl 2h --label task=t-1";
    let created = json(&ok(&m, &work, "sandbox create", line, &env).out);
    assert_eq!(created["labels"]["task"], "t-1", "{created}");
    std::fs::write(
        work.join("agent-1-policy.yaml"),
        "extends: default\nallow:\n  - host: example.com\n    methods: [GET]\n",
    )
    .unwrap();
    let line = "cordon sandbox set-policy agent-1 --policy-file agent-1-policy.yaml";
    let own = json(&ok(&m, &work, "sandbox set-policy", line, &env).out);
    assert_eq!(own["inline_policy"]["extends"], "default", "{own}");
    assert_eq!(
        own["inline_policy"]["allow"][0]["methods"],
        serde_json::json!(["GET"]),
        "{own}"
    );
    let line = "cordon sandbox set-policy agent-1 --policy default";
    let back = json(&ok(&m, &work, "sandbox set-policy", line, &env).out);
    assert_eq!(
        (&back["policy"], &back["inline_policy"]),
        (&Value::from("default"), &Value::Null),
        "{back}"
    );
    let stopped = server.stop(&m, "TERM");
    assert_eq!(stopped.code, 0, "{}", stopped.err);
    // The audit lines went to standard output.
    assert!(stopped.out.contains("\"host\":\"example.com\""), "{}", stopped.out);

    // `cordon run`: its state goes to the state folder, nothing to the folder it was started in.
    shown("run", "cordon run");
    let server = m.spawn(&work, "cordon run", &env);
    assert!(m.listening(3128), "{}", server.stderr());
    let stopped = server.stop(&m, "TERM");
    assert_eq!(stopped.code, 0, "{}", stopped.err);
    for file in ["admin-token", "audit-key", "cordon.db", "signing-key"] {
        assert!(
            state.join("state").join(file).exists(),
            "state/{file} is not in the state folder"
        );
    }
    let mut left: Vec<String> = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["agent-1-policy.yaml"],
        "cordon run left files where it was started"
    );

    // The audit lines in a file, the operational log as JSON at debug level; then the run's lines verified.
    let line = "CORDON_LOG=debug CORDON_LOG_FORMAT=json cordon run > audit.jsonl";
    shown("run", line);
    let server = m.spawn(&work, line, &env);
    assert!(m.listening(3128), "{}", server.stderr());
    assert_eq!(ok(&m, &work, "", curl, &env).out, EXAMPLE_PAGE);
    // Something that is not HTTP sent to the admin API: cordon answers 400 and says so at debug level only.
    let junk = "exec bash -c 'exec 3<>/dev/tcp/127.0.0.1/9090; printf \"GARBAGE\\r\\n\\r\\n\" >&3; head -n 1 <&3'";
    assert!(m.run(&work, junk, &[], "").out.starts_with("HTTP/1.1 400"));
    let stopped = server.stop(&m, "TERM");
    assert_eq!(stopped.code, 0, "{}", stopped.err);
    assert_eq!(stopped.out, "", "the audit lines went to the file");
    let log: Vec<Value> = stopped.err.lines().map(json).collect();
    assert!(
        log.iter().any(|l| l["level"] == "DEBUG"
            && l["message"]
                .as_str()
                .is_some_and(|m| m.contains("admin connection ended"))),
        "{}",
        stopped.err
    );
    let audit = std::fs::read_to_string(work.join("audit.jsonl")).unwrap();
    let records: Vec<Value> = audit.lines().map(json).collect();
    assert!(
        records
            .iter()
            .any(|r| r["host"] == "example.com" && r["sandbox"] == "demo" && r["decision"] == "allow"),
        "{audit}"
    );
    let line = "cordon audit verify --public-key \"$(cordon audit public-key)\" audit.jsonl";
    shown("audit", line);
    let ran = ok(&m, &work, "audit verify", line, &env);
    assert!(ran.out.contains("verdict  intact"), "{}", ran.out);

    // Your own copy checked strictly: the embedded configuration passes; a warning fails it.
    std::fs::write(work.join("cordon.yaml"), include_str!("../../../config/cordon.yaml")).unwrap();
    let line = "cordon check --strict --config cordon.yaml";
    let ran = ok(&m, &work, "check", line, &env);
    assert!(ran.out.starts_with("cordon.yaml: ok\n"), "{}", ran.out);
    let warned =
        include_str!("../../../config/cordon.yaml").replace("  allow_cidrs: []", "  allow_cidrs: [10.0.0.0/8]");
    std::fs::write(work.join("cordon.yaml"), warned).unwrap();
    let ran = m.run(&work, line, &env, "");
    assert_eq!(ran.code, 1, "{}{}", ran.out, ran.err);
    assert!(
        ran.err.contains("network.allow_cidrs[0]") && ran.err.contains("--strict"),
        "{}",
        ran.err
    );
}
