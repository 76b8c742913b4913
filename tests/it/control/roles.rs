//! Admin principals and roles, through the admin API: each named token may do what its roles allow and nothing
//! more (a 403 naming the role it needs), every change and every refusal is an `admin` audit record naming the
//! principal and its address, and a decision carries the deciding token's name, never one from the body. Bad
//! token lists are refused by `cordon check` and `cordon run` alike, naming the key.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};

use crate::rigs::control::{ControlRig, control_rig_edit, url};
use crate::rigs::process::Signal;
use crate::rigs::process::cordon_env;
use crate::rigs::wait::TimedChild;

/// The rig with a first rule of `web` that holds requests to unlisted.test, and three named tokens besides the
/// admin token: `ci` (platform), `anna` (approver), `vic` (viewer), their files made at start.
async fn rig() -> ControlRig {
    control_rig_edit("approval: { timeout: 30s }\n", |yaml, up| {
        let ask =
            format!("  web:\n    allow:\n      - host: unlisted.test\n        ports: [{up}]\n        action: ask\n");
        let line = yaml
            .lines()
            .find(|l| l.starts_with("  admin_token: "))
            .unwrap()
            .to_owned();
        let dir = line
            .trim_start_matches("  admin_token: { file: ")
            .trim_end_matches("/admin-token }");
        let entry = |name: &str, role: &str| {
            format!("\n    - {{ name: {name}, roles: [{role}], token: {{ file: {dir}/{name}-token }} }}")
        };
        let tokens = format!(
            "{line}\n  admin_tokens:{}{}{}",
            entry("ci", "platform"),
            entry("anna", "approver"),
            entry("vic", "viewer")
        );
        yaml.replacen("  web:\n    allow:\n", &ask, 1)
            .replacen(&line, &tokens, 1)
    })
    .await
}

fn token(rig: &ControlRig, name: &str) -> String {
    std::fs::read_to_string(rig.dir.path().join(format!("{name}-token")))
        .unwrap()
        .trim()
        .to_owned()
}

async fn call(rig: &ControlRig, who: &str, method: &str, path: &str, body: &str) -> (u16, Value) {
    let t = token(rig, who);
    let (status, _, text) = rig.raw(method, path, Some(&t), body).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

const CREATE: &str = r#"{"user": "alice", "policy": "web", "ttl": "1h"}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_token_does_what_its_roles_allow_and_every_change_is_recorded_with_its_principal() {
    let rig = rig().await;

    // The viewer reads, and may change nothing; the 403 names the role each call needs.
    assert_eq!(call(&rig, "vic", "GET", "/v1/sandboxes", "").await.0, 200);
    assert_eq!(call(&rig, "vic", "GET", "/v1/approvals", "").await.0, 200);
    let (status, v) = call(&rig, "vic", "POST", "/v1/sandboxes", CREATE).await;
    assert_eq!(status, 403, "{v}");
    assert_eq!(v["error"]["code"], "forbidden");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("sandbox_created needs the role admin or platform") && message.contains("\"vic\" has viewer"),
        "{message}"
    );
    let (status, v) = call(
        &rig,
        "vic",
        "POST",
        "/v1/approvals/ap-0000000000000000",
        r#"{"decision":"deny"}"#,
    )
    .await;
    assert_eq!(status, 403, "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("admin or approver"),
        "{v}"
    );

    // An approver cannot create sandboxes or reload; the platform token creates, and cannot reload or decide.
    let (status, v) = call(&rig, "anna", "POST", "/v1/sandboxes", CREATE).await;
    assert_eq!(status, 403, "{v}");
    assert_eq!(call(&rig, "anna", "POST", "/v1/reload", "").await.0, 403);
    let (status, created) = call(&rig, "ci", "POST", "/v1/sandboxes", CREATE).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(call(&rig, "ci", "POST", "/v1/reload", "").await.0, 403);
    let (status, v) = call(
        &rig,
        "ci",
        "POST",
        "/v1/approvals/ap-0000000000000000",
        r#"{"decision":"deny"}"#,
    )
    .await;
    assert_eq!(status, 403, "{v}");
    // The legacy admin token is the principal `admin`, with every right.
    assert_eq!(rig.raw("POST", "/v1/reload", Some(&rig.token), "").await.0, 200);

    // A token that is none of them is 401 and recorded without a principal.
    let (status, _, _) = rig.raw("POST", "/v1/sandboxes", Some("not-a-token"), CREATE).await;
    assert_eq!(status, 401);

    let created_record = rig
        .audit
        .wait_admin(|r| {
            r.decision == cordon::audit::Verdict::Allow
                && r.admin.as_ref().is_some_and(|a| a["action"] == "sandbox_created")
        })
        .await
        .expect("no record of the creation");
    let a = created_record.admin.as_ref().unwrap();
    assert_eq!(
        (a["principal"].as_str(), a["via"].as_str()),
        (Some("ci"), Some("token"))
    );
    assert_eq!(a["roles"], json!(["platform"]));
    assert_eq!(created_record.sandbox.as_deref(), Some(id.as_str()));
    assert_eq!(created_record.status, Some(201));
    assert_eq!(created_record.reason.as_deref(), Some("admin_action"));
    assert!(
        created_record.client.starts_with("127.0.0.1:"),
        "{}",
        created_record.client
    );
    let reload = rig
        .audit
        .wait_admin(|r| {
            r.admin
                .as_ref()
                .is_some_and(|a| a["action"] == "reload" && a["principal"] == "admin")
        })
        .await
        .expect("no record of the reload");
    assert!(
        reload.admin.unwrap()["detail"]
            .as_str()
            .unwrap()
            .starts_with("generation ")
    );
    let refused: Vec<_> = rig
        .audit
        .admin()
        .into_iter()
        .filter(|r| r.decision == cordon::audit::Verdict::Deny)
        .collect();
    let forbidden = |who: &str, action: &str| {
        refused.iter().any(|r| {
            r.reason.as_deref() == Some("admin_forbidden")
                && r.status == Some(403)
                && r.admin
                    .as_ref()
                    .is_some_and(|a| a["principal"] == who && a["action"] == action)
        })
    };
    assert!(forbidden("vic", "sandbox_created"), "{refused:#?}");
    assert!(forbidden("anna", "sandbox_created"), "{refused:#?}");
    assert!(forbidden("anna", "reload"), "{refused:#?}");
    assert!(forbidden("ci", "approval_decided"), "{refused:#?}");
    assert!(
        refused.iter().any(|r| r.reason.as_deref() == Some("admin_unauthorized")
            && r.admin
                .as_ref()
                .is_some_and(|a| a["principal"].is_null() && a["action"] == "sandbox_created")),
        "{refused:#?}"
    );
    // Reads are not recorded; nothing the viewer was refused happened.
    assert!(
        !rig.audit
            .admin()
            .iter()
            .any(|r| r.admin.as_ref().unwrap()["principal"] == "vic" && r.decision != cordon::audit::Verdict::Deny)
    );
    let listed = call(&rig, "vic", "GET", "/v1/sandboxes", "").await.1;
    let runtime = listed["sandboxes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["origin"] == "api")
        .count();
    assert!(
        listed["sandboxes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == id.as_str()),
        "{listed}"
    );
    assert_eq!(runtime, 1, "only ci's sandbox was made: {listed}");

    // Revoked by the platform token: recorded with the sandbox.
    assert_eq!(
        call(&rig, "ci", "DELETE", &format!("/v1/sandboxes/{id}"), "").await.0,
        200
    );
    assert!(
        rig.audit
            .wait_admin(|r| r.sandbox.as_deref() == Some(id.as_str())
                && r.admin
                    .as_ref()
                    .is_some_and(|a| a["action"] == "sandbox_revoked" && a["principal"] == "ci"))
            .await
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_decision_carries_the_approvers_token_name_and_the_request_it_covered() {
    let rig = rig().await;
    let created = rig.create("web", "1h").await;
    let (id, credential) = (created["id"].as_str().unwrap(), created["credential"].as_str().unwrap());
    let ca = rig.ca_file(id).await;
    let held = crate::rigs::process::curl()
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}"])
        .args(["-x", &format!("http://{id}:{credential}@{}", rig.proxy)])
        .arg("--cacert")
        .arg(&ca)
        .args(["--data", "pay 5"])
        .arg(url(&rig, "unlisted.test", "/v1/pay?to=acme"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        rig.until(Duration::from_secs(10), || rig.state.approvals.pending_count() == 1)
            .await
    );
    let approval = rig.state.approvals.pending()[0].id.clone();
    let path = format!("/v1/approvals/{approval}");

    // A name in the body is refused: who decides is the caller.
    let (status, v) = call(&rig, "anna", "POST", &path, r#"{"decision": "allow", "by": "the-ceo"}"#).await;
    assert_eq!(status, 422, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("\"anna\""), "{v}");
    assert_eq!(rig.state.approvals.pending_count(), 1, "nothing was decided");

    let (status, v) = call(&rig, "anna", "POST", &path, r#"{"decision": "allow"}"#).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["decision"]["by"], "anna");
    let out = tokio::task::spawn_blocking(move || held.timed_wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200");

    let request = rig
        .audit
        .wait_any(|r| r.approval.as_ref().is_some_and(|a| a.outcome == "allow"))
        .await
        .expect("no record of the request");
    assert_eq!(request.approval.unwrap().by.as_deref(), Some("anna"));
    let decided = rig
        .audit
        .wait_admin(|r| r.admin.as_ref().is_some_and(|a| a["action"] == "approval_decided"))
        .await
        .expect("no record of the decision");
    let a = decided.admin.as_ref().unwrap();
    assert_eq!(a["principal"], "anna");
    assert_eq!(decided.sandbox.as_deref(), Some(id));
    assert_eq!(decided.user.as_deref(), Some("alice"));
    assert_eq!(decided.policy.as_deref(), Some("web"));
    assert_eq!(
        (
            decided.method.as_deref(),
            decided.host.as_deref(),
            decided.path.as_deref()
        ),
        (Some("POST"), Some("unlisted.test"), Some("/v1/pay"))
    );
    assert_eq!(decided.port, Some(rig.up.addr.port()));
    let ap = decided.approval.unwrap();
    assert_eq!(
        (
            ap.id.as_str(),
            ap.outcome.as_str(),
            ap.by.as_deref(),
            ap.scope.as_deref()
        ),
        (approval.as_str(), "allow", Some("anna"), Some("once"))
    );
}

/// A configuration whose control section is `control` (plus the admin listener), in `dir`.
fn config(dir: &std::path::Path, control: &str) -> String {
    let path = dir.join("cordon.yaml");
    let yaml = format!(
        "listen: {{ proxy: 127.0.0.1:0, admin: 127.0.0.1:0 }}\nca: {{ dir: {d}/cas }}\naudit: {{ path: {d}/audit.log }}\n\
         control:\n{control}\npolicies:\n  default:\n    allow: []\n",
        d = dir.display()
    );
    std::fs::write(&path, yaml).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn bad_token_lists_are_refused_by_check_and_run_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    std::fs::write(dir.path().join("one"), "same-value-0123456789\n").unwrap();
    std::fs::write(dir.path().join("two"), "same-value-0123456789\n").unwrap();
    let cases = [
        (
            format!("  admin_tokens:\n    - {{ name: ci, roles: [aprover], token: {{ file: {d}/one }} }}"),
            "control.admin_tokens[0].roles[0]: \"aprover\" is not a role; the roles are admin, platform, approver, viewer",
        ),
        (
            format!(
                "  admin_tokens:\n    - {{ name: ci, roles: [viewer], token: {{ file: {d}/one }} }}\n    \
                 - {{ name: ci, roles: [platform], token: {{ file: {d}/x }} }}"
            ),
            "control.admin_tokens[1].name: \"ci\" is already the name of control.admin_tokens[0]",
        ),
        (
            format!(
                "  admin_token: {{ file: {d}/a }}\n  admin_tokens:\n    - {{ name: admin, roles: [viewer], token: {{ file: {d}/one }} }}"
            ),
            "control.admin_tokens[0].name: \"admin\" is already the name of control.admin_token",
        ),
        (
            format!("  admin_tokens:\n    - {{ name: ci, roles: [], token: {{ file: {d}/one }} }}"),
            "control.admin_tokens[0].roles: is empty",
        ),
        (
            format!("  admin_tokens:\n    - {{ name: \"c i\", roles: [viewer], token: {{ file: {d}/one }} }}"),
            "control.admin_tokens[0].name: \"c i\" is not a token name",
        ),
        (
            format!("  admin_tokens:\n    - {{ name: ci, roles: [viewer], tokn: {{ file: {d}/one }} }}"),
            "control.admin_tokens",
        ),
        (
            format!(
                "  admin_tokens:\n    - {{ name: ci, roles: [viewer], token: {{ file: {d}/one }} }}\n    \
                 - {{ name: anna, roles: [approver], token: {{ file: {d}/two }} }}"
            ),
            "control.admin_tokens[1]: the same token as the one named \"ci\"",
        ),
    ];
    for (control, said) in cases {
        let c = config(dir.path(), &control);
        let (code, out, err) = cordon_env(&["check", "--config", &c], &[]);
        assert_eq!(code, 2, "check must refuse:\n{control}\n{out}{err}");
        assert!(err.contains(said), "check on\n{control}\nsaid: {err}");
        let (code, _, run_err) = cordon_env(&["run", "--config", &c], &[]);
        assert_eq!(code, 2, "run must refuse:\n{control}\n{run_err}");
        assert!(run_err.contains(said), "run on\n{control}\nsaid: {run_err}");
    }
}

/// Through the binary: admin records land in the signed, hash-chained audit file beside the traffic, valid
/// against docs/audit.schema.json, and `cordon audit verify` accepts the chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_records_are_in_the_signed_chain_and_match_the_schema() {
    use crate::rigs::audit::{assert_schema, setup};
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let up = crate::rigs::upstreams::upstream("127.0.0.2").await;
    let c = setup(dir.path(), &audit, up.addr.port(), "");
    let d = dir.path().display();
    let yaml = std::fs::read_to_string(&c.config).unwrap().replace(
        "control: { watch: false, admin_token:",
        &format!(
            "control: {{ watch: false, admin_tokens: [{{ name: ci, roles: [platform], token: {{ file: {d}/ci-token }} }}], admin_token:"
        ),
    );
    std::fs::write(&c.config, yaml).unwrap();
    let child = crate::rigs::process::spawn_cordon(&c.config, c.proxy, &[]).await;
    let at = std::net::SocketAddr::from(([127, 0, 0, 1], c.admin));
    let ci = std::fs::read_to_string(dir.path().join("ci-token")).unwrap();
    let admin_request = crate::rigs::control::admin_request;
    let body = r#"{"user": "alice", "policy": "web", "ttl": "10m"}"#;
    let (status, _, created) = admin_request(at, "POST", "/v1/sandboxes", Some(ci.trim()), body).await;
    assert_eq!(status, 201, "{created}");
    let (status, _, _) = admin_request(at, "POST", "/v1/reload", Some(ci.trim()), "").await;
    assert_eq!(status, 403);
    let (status, _, _) = admin_request(at, "GET", "/v1/sandboxes", Some("wrong"), "").await;
    assert_eq!(status, 401);
    assert_eq!(c.get(&mut None, "/x").await.map(|r| r.0), Some(200));
    let out = crate::rigs::process::signal_and_wait(child, Signal::SIGTERM).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let lines: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let admin: Vec<&Value> = lines.iter().filter(|l| l["kind"] == "admin").collect();
    let actions: Vec<(&str, &str, &Value)> = admin
        .iter()
        .map(|r| {
            (
                r["admin"]["action"].as_str().unwrap(),
                r["decision"].as_str().unwrap(),
                &r["admin"]["principal"],
            )
        })
        .collect();
    assert_eq!(
        actions,
        [
            ("sandbox_created", "allow", &json!("ci")),
            ("reload", "deny", &json!("ci")),
            ("read", "deny", &Value::Null)
        ],
        "{admin:#?}"
    );
    assert!(
        lines.iter().any(|l| l["kind"] == "http"),
        "the traffic is in the same file"
    );
    assert_schema(&audit);
    let (code, said) = c.verify(&[&audit]);
    assert_eq!(code, 0, "{said}");
}

#[test]
fn check_lists_the_tokens_and_their_roles() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let c = config(
        dir.path(),
        &format!(
            "  admin_token: {{ file: {d}/a }}\n  admin_tokens:\n    - {{ name: ci, roles: [platform], token: {{ file: {d}/ci }} }}\n    \
             - {{ name: anna, roles: [viewer, approver], token: {{ file: {d}/anna }} }}"
        ),
    );
    let (code, out, err) = cordon_env(&["check", "--config", &c], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("admin tokens admin (admin), ci (platform), anna (approver, viewer)"),
        "{out}"
    );
}
