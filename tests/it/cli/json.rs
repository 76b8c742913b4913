//! `--json` through the binary, parsed and checked field by field: the admin API's commands against a running
//! cordon (its admin address and token given as CORDON_ADMIN_URL and CORDON_ADMIN_TOKEN, so the `sandbox` and
//! `approvals` examples of `--help` run there as printed), and `audit verify --json` on a real log and a
//! tampered copy of it.

use serde_json::Value;

use super::examples::{run_in, shown};
use crate::rigs::control::{ControlRig, control_rig_edit};
use crate::rigs::process::Signal;

/// A running cordon with the embedded configuration's policy name (`default`) and lifetimes (at most 7 days).
async fn rig() -> ControlRig {
    control_rig_edit("", |yaml, up| {
        let default = format!("policies:\n  default:\n    allow:\n      - host: allowed.test\n        ports: [{up}]\n");
        assert!(
            yaml.contains("  max_ttl: 2h\n") && yaml.contains("\npolicies:\n"),
            "the rig changed"
        );
        yaml.replacen("  max_ttl: 2h\n", "  max_ttl: 7d\n", 1)
            .replacen("\npolicies:\n", &format!("\n{default}"), 1)
    })
    .await
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The entry of sandbox `id` in `cordon sandbox list --json`'s answer.
fn listed_one<'a>(listed: &'a Value, id: &str) -> &'a Value {
    listed["sandboxes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_commands_print_json_and_their_examples_run_against_a_running_cordon() {
    let rig = rig().await;
    let (url, token, proxy) = (
        format!("http://{}", rig.admin),
        rig.token.clone(),
        rig.proxy.to_string(),
    );
    // The commands wait for the rig, which answers on the runtime's other threads.
    tokio::task::spawn_blocking(move || admin_commands(&url, &token, &proxy))
        .await
        .unwrap();
}

/// The `sandbox` and `approvals` examples (and more `--json`) against the admin API at `url`.
fn admin_commands(url: &str, token: &str, proxy: &str) {
    let dir = tempfile::tempdir().unwrap();
    let env = [("CORDON_ADMIN_URL", url), ("CORDON_ADMIN_TOKEN", token)];
    let d = dir.path();
    let run = |path: &str, line: &str, after: &str| {
        shown(path, line);
        let (code, out, err) = run_in(d, line, after, &env);
        assert_eq!(code, 0, "{line}: {out}{err}");
        out
    };

    let line = "cordon sandbox create --user alice --policy default --id agent-1 --ttl 2h --label task=t-1";
    let created = json(&run("sandbox create", line, ""));
    assert_eq!(created["id"], "agent-1");
    assert_eq!(created["user"], "alice");
    assert!(
        created["credential"].as_str().is_some_and(|c| !c.is_empty()),
        "{created}"
    );
    assert!(created["env"].is_object(), "{created}");

    let table = run("sandbox list", "cordon sandbox list", "");
    let mut rows = table.lines();
    assert!(rows.next().unwrap().starts_with("ID "), "{table}");
    assert!(
        rows.any(|r| r.starts_with("agent-1 ") && r.contains(" alice ")),
        "{table}"
    );
    let listed = json(&run("sandbox list", "cordon sandbox list --json", ""));
    let one = listed_one(&listed, "agent-1");
    assert_eq!(
        (&one["user"], &one["policy"]),
        (&Value::from("alice"), &Value::from("default"))
    );

    let shown_one = json(&run("sandbox show", "cordon sandbox show agent-1", ""));
    assert_eq!(shown_one["id"], "agent-1");
    assert!(
        shown_one["ca_certificate"]
            .as_str()
            .unwrap()
            .starts_with("-----BEGIN CERTIFICATE-----")
    );
    let (code, out, err) = run_in(d, "cordon sandbox show agent-1 --json", "", &env);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out)["id"], "agent-1");

    let renewed = json(&run("sandbox renew", "cordon sandbox renew agent-1 --ttl 4h", ""));
    assert!(renewed["expires_at"].is_string(), "{renewed}");
    run(
        "sandbox env",
        "cordon sandbox env agent-1 --format dotenv > agent-1.env",
        "",
    );
    let dotenv = std::fs::read_to_string(d.join("agent-1.env")).unwrap();
    assert!(
        dotenv.lines().any(|l| l.starts_with("HTTPS_PROXY=\"http://agent-1:")),
        "{dotenv}"
    );
    run(
        "sandbox ca-bundle",
        "cordon sandbox ca-bundle agent-1 > ca-bundle.pem",
        "",
    );
    let bundle = std::fs::read_to_string(d.join("ca-bundle.pem")).unwrap();
    let certificates = bundle.matches("-----BEGIN CERTIFICATE-----").count();
    assert!(
        bundle.starts_with("# The sandbox's CA") && certificates > 1,
        "{}",
        &bundle[..bundle.len().min(300)]
    );
    let line = "cordon sandbox set-policy agent-1 --policy default";
    let set = json(&run("sandbox set-policy", line, ""));
    assert_eq!(set["policy"], "default", "{set}");

    // The environment lands in the shell that evaluates it.
    let line = "eval \"$(cordon sandbox create --user alice --policy default --format export)\"";
    let exported = run("sandbox create", line, "printf %s \"$HTTPS_PROXY\"");
    assert!(
        exported.starts_with("http://") && exported.contains(proxy),
        "{exported}"
    );
    let (code, _, err) = run_in(
        d,
        "cordon sandbox create --user a --policy default --json --format export",
        "",
        &env,
    );
    assert_eq!(code, 2, "--json and --format together: {err}");
    assert!(err.contains("--json") && err.contains("--format"), "{err}");

    let table = run("approvals list", "cordon approvals list", "");
    assert_eq!(table, "ID  SANDBOX  USER  METHOD  URL  EXPIRES  EXCERPT\n");
    let pending = json(&run("approvals list", "cordon approvals list --json", ""));
    assert_eq!(pending["pending"], serde_json::json!([]));
    let table = run("approvals grants", "cordon approvals grants", "");
    assert!(table.starts_with("ID  SANDBOX  REACH  METHOD"), "{table}");
    let grants = json(&run("approvals grants", "cordon approvals grants --json", ""));
    assert_eq!(grants["grants"], serde_json::json!([]));

    let revoked = json(&run("sandbox revoke", "cordon sandbox revoke agent-1", ""));
    assert!(revoked["revoked_at"].is_string(), "{revoked}");
    let listed = json(&run("sandbox list", "cordon sandbox list --json", ""));
    let one = listed_one(&listed, "agent-1");
    assert!(one["revoked_at"].is_string(), "{listed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_verify_json_gives_the_verdict_counts_and_problems() {
    let (dir, port, config) = crate::rigs::audit::signed_config("300ms");
    crate::rigs::audit::run_once(&config, port, 3, Signal::SIGTERM).await;
    let log = dir.path().join("audit.jsonl");
    let cfg = config.to_str().unwrap();
    let (code, out) = crate::rigs::audit::verify(&["--config", cfg, "--json"], &[&log]);
    assert_eq!(code, 0, "{out}");
    let v = json(&out);
    assert_eq!(v["verdict"], "intact");
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["files"], serde_json::json!([log.display().to_string()]));
    assert!(v["lines"].as_u64().unwrap() >= 3, "{v}");
    assert!(v["signed_checkpoints"].as_u64().unwrap() >= 1, "{v}");
    assert_eq!(v["anchors"], serde_json::json!({"given": 0, "found": 0}));
    assert_eq!(
        (&v["tampering"], &v["notes"]),
        (&serde_json::json!([]), &serde_json::json!([]))
    );

    // A record edited: tampered, exit 1, the line named.
    let lines: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let mut edited = lines.clone();
    let at = edited.iter().position(|l| l.contains("host-1.test")).unwrap();
    edited[at] = edited[at].replace("host-1.test", "host-9.test");
    let copy = crate::rigs::audit::copy(dir.path(), "edited.jsonl", &edited);
    let (code, out) = crate::rigs::audit::verify(&["--config", cfg, "--json"], &[&copy]);
    assert_eq!(code, 1, "{out}");
    let v = json(&out);
    assert_eq!(
        (&v["verdict"], &v["exit_code"]),
        (&Value::from("tampered"), &Value::from(1))
    );
    let problems = v["tampering"].as_array().unwrap();
    assert!(
        problems.iter().any(|p| p
            .as_str()
            .unwrap()
            .starts_with(&format!("{}:{}:", copy.display(), at + 1))),
        "{v}"
    );

    // The last lines cut: unsealed, exit 3, with a note.
    let cut = crate::rigs::audit::copy(dir.path(), "cut.jsonl", &lines[..lines.len() - 1]);
    let (code, out) = crate::rigs::audit::verify(&["--config", cfg, "--json"], &[&cut]);
    let v = json(&out);
    assert_eq!(
        (code, &v["verdict"], &v["exit_code"]),
        (3, &Value::from("unsealed"), &Value::from(3)),
        "{v}"
    );
    assert!(!v["notes"].as_array().unwrap().is_empty(), "{v}");
}
