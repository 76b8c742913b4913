//! `cordon approvals`: with the binary against a running cordon's admin API, a request held by an `action: ask`
//! rule is listed, allowed for good (a standing grant then lets the same request through without asking), the grant
//! removed, and the next one held and denied. Each decision carries the name of the admin token it was made with,
//! never a name the command line gives.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::rigs::control::{ControlRig, control_rig_edit, url};
use crate::rigs::wait::{TimedChild, Within};

/// The standard rig, with a first rule of the `web` policy that holds every request to unlisted.test, and two
/// approvers' tokens (`dana`, `erin`; their files made at start) besides the admin token.
async fn rig() -> ControlRig {
    control_rig_edit("approval: { timeout: 30s }\n", |yaml, up| {
        let ask =
            format!("  web:\n    allow:\n      - host: unlisted.test\n        ports: [{up}]\n        action: ask\n");
        assert!(yaml.contains("  web:\n    allow:\n"), "the rig's configuration changed");
        let line = yaml.lines().find(|l| l.starts_with("  admin_token: ")).unwrap().to_owned();
        let dir = line.trim_start_matches("  admin_token: { file: ").trim_end_matches("/admin-token }");
        let tokens = format!(
            "{line}\n  admin_tokens:\n    - {{ name: dana, roles: [approver], token: {{ file: {dir}/dana-token }} }}\n    \
             - {{ name: erin, roles: [approver, viewer], token: {{ file: {dir}/erin-token }} }}"
        );
        yaml.replacen("  web:\n    allow:\n", &ask, 1).replacen(&line, &tokens, 1)
    })
    .await
}

/// `cordon approvals ARGS` against the rig with the token of `who` (`admin`, `dana`, `erin`), `USER` set to
/// someone else: (success, exit code, stdout, stderr).
async fn cli(rig: &ControlRig, args: &[&str], who: &str) -> (bool, i32, String, String) {
    let mut cmd = Command::new(crate::rigs::process::BIN);
    cmd.args(["approvals", "--admin", &format!("http://{}", rig.admin), "--token-file"])
        .arg(rig.dir.path().join(format!("{who}-token")))
        .args(args)
        .env("USER", "mallory")
        .env_remove("CORDON_ADMIN_TOKEN")
        .env_remove("CORDON_ADMIN_URL")
        .env_remove("CORDON_CONFIG");
    let out = tokio::task::spawn_blocking(move || cmd.timed_output().unwrap())
        .await
        .unwrap();
    (
        out.status.success(),
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A curl POST through the rig as sandbox `id`, running in the background.
fn post(rig: &ControlRig, id: &str, credential: &str, ca: &Path) -> Child {
    crate::rigs::process::curl()
        .args(["-o", "/dev/null", "-w", "%{http_code}"])
        .args(["-x", &format!("http://{id}:{credential}@{}", rig.proxy)])
        .arg("--cacert")
        .arg(ca)
        .args(["--data", r#"{"title": "please"}"#])
        .arg(url(rig, "unlisted.test", "/v1/issues"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The HTTP status curl got (0 if it failed).
async fn status(child: Child) -> u16 {
    let out = tokio::task::spawn_blocking(move || child.timed_wait_with_output().unwrap())
        .await
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(0)
}

/// `value` has every field of `expected`, with the same value.
fn has(value: &Value, expected: &Value) {
    for (key, want) in expected.as_object().unwrap() {
        assert_eq!(&value[key], want, "{key} of {value}");
    }
}

/// The id of the one pending approval, once there is one.
async fn one_pending(rig: &ControlRig) -> String {
    let listed = rig
        .until(Duration::from_secs(10), || rig.state.approvals.pending_count() == 1)
        .await;
    assert!(listed, "no request was held for approval");
    rig.state.approvals.pending()[0].id.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_approvals_command_decides_held_requests() {
    let rig = rig().await;
    let created = rig.create("web", "1h").await;
    let (id, credential) = (created["id"].as_str().unwrap(), created["credential"].as_str().unwrap());
    let ca = rig.dir.path().join("sandbox.pem");
    std::fs::write(&ca, created["ca_certificate"].as_str().unwrap()).unwrap();
    let port = rig.up.addr.port();

    let (ok, _, out, err) = cli(&rig, &["list"], "admin").await;
    assert!(ok, "{err}");
    assert_eq!(out, "ID  SANDBOX  USER  METHOD  URL  EXPIRES  EXCERPT\n");

    // A held request is listed, as JSON and as a table...
    let first = post(&rig, id, credential, &ca);
    let approval = one_pending(&rig).await;
    let (ok, _, out, err) = cli(&rig, &["list", "--json"], "admin").await;
    assert!(ok, "{err}");
    let listed: Value = serde_json::from_str(&out).unwrap();
    let pending = &listed["pending"][0];
    assert_eq!(pending["id"], approval.as_str());
    let excerpt = r#"{"title": "please"}"#;
    let expected = json!({
        "sandbox": id, "user": "alice", "policy": "web", "method": "POST", "host": "unlisted.test", "port": port,
        "path": "/v1/issues", "excerpt": excerpt, "rule": 0
    });
    has(pending, &expected);
    let (ok, _, table, err) = cli(&rig, &["list"], "admin").await;
    assert!(ok, "{err}");
    let row = table.lines().nth(1).unwrap_or_default();
    assert!(
        row.starts_with(&format!(
            "{approval}  {id}  alice  POST    https://unlisted.test:{port}/v1/issues  "
        )),
        "{table}"
    );
    assert!(row.ends_with(r#"  {"title": "please"}"#), "{table}");

    // ...and allowed for good, by the principal of the token (not $USER).
    let (ok, _, out, err) = cli(&rig, &["allow", &approval, "--always"], "dana").await;
    assert!(ok, "{err}");
    let decided: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        decided["decision"],
        json!({"verdict": "allow", "scope": "always", "by": "dana"})
    );
    assert_eq!(decided["approval"]["id"], approval.as_str());
    assert_eq!(status(first).await, 200);

    // The standing grant lets the same request through without asking.
    let (ok, _, out, err) = cli(&rig, &["grants", "--json"], "admin").await;
    assert!(ok, "{err}");
    let grants: Value = serde_json::from_str(&out).unwrap();
    let grant = grants["grants"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(grants["grants"].as_array().unwrap().len(), 1, "{grants}");
    let expected = json!({
        "sandbox": id, "method": "POST", "host": "unlisted.test", "port": port, "path": "/v1/issues", "by": "dana",
        "approval": approval
    });
    has(&grants["grants"][0], &expected);
    let (ok, _, table, err) = cli(&rig, &["grants"], "admin").await;
    assert!(ok, "{err}");
    assert!(
        table.contains(&format!(
            "{grant}  {id}  always  POST    unlisted.test:{port}/v1/issues  any   dana  "
        )),
        "{table}"
    );
    assert_eq!(status(post(&rig, id, credential, &ca)).await, 200);
    assert_eq!(rig.state.approvals.pending_count(), 0);

    // Once the grant is removed, the next request is held again, and denied.
    let (ok, _, out, err) = cli(&rig, &["revoke-grant", &grant], "admin").await;
    assert!(ok, "{err}");
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), json!({"removed": grant}));
    let (ok, _, _, err) = cli(&rig, &["revoke-grant", &grant], "admin").await;
    assert!(!ok && err.contains(&format!("no grant {grant:?}")), "{err}");
    let third = post(&rig, id, credential, &ca);
    let approval = one_pending(&rig).await;
    // A name on the command line is refused, and nothing is decided.
    let (ok, code, _, err) = cli(&rig, &["deny", &approval, "--by", "dana"], "erin").await;
    assert!(
        !ok && code == 2 && err.contains("--by is no longer taken"),
        "--by: {code} {err}"
    );
    assert_eq!(rig.state.approvals.pending_count(), 1, "nothing was decided");
    let (ok, _, out, err) = cli(&rig, &["deny", &approval], "erin").await;
    assert!(ok, "{err}");
    let decided: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        decided["decision"],
        json!({"verdict": "deny", "scope": "once", "by": "erin"})
    );
    assert_eq!(status(third).await, 403);
    let (ok, _, out, _) = cli(&rig, &["grants"], "admin").await;
    assert!(ok && out.lines().count() == 1, "{out}");

    // An approval that is not pending says so.
    let (ok, code, _, err) = cli(&rig, &["allow", &approval], "dana").await;
    assert!(!ok && code == 1 && err.contains("no pending approval"), "{code} {err}");
}
