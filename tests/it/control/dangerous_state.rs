//! No silent dangerous state, at run time (issue 36, item 7): a policy in report mode (everything allowed, only
//! recorded) is named in a WARN at start and whenever a reload newly puts one in report mode; a renewal that
//! would shorten a sandbox is answered 409 with both expiries, not 200 doing nothing.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::rigs::control::admin_request;
use crate::rigs::ports::free_port;
use crate::rigs::process::{BIN, spawn_cordon};
use crate::rigs::wait::{TimedChild, Within};

/// A configuration with an admin API and the store run-time sandboxes need, and `policies` (YAML, indented
/// under `policies:`).
fn yaml(dir: &Path, port: u16, admin: u16, policies: &str) -> String {
    format!(
        "listen: {{ proxy: 127.0.0.1:{port}, admin: 127.0.0.1:{admin} }}\n\
         audit: {{ path: {d}/audit.jsonl }}\nca: {{ dir: {d}/cas }}\n\
         control:\n  admin_token: {{ file: {d}/admin-token }}\n  signing_key: {{ file: {d}/signing-key }}\n  \
         store: {d}/cordon.db\n  default_ttl: 1h\n  max_ttl: 7d\n\
         policies:\n{policies}",
        d = dir.display()
    )
}

/// Policy `name` in `mode` allowing `host`.
fn policy(name: &str, mode: &str, host: &str) -> String {
    format!("  {name}:\n    mode: {mode}\n    allow:\n      - host: {host}\n")
}

struct Running {
    child: Option<std::process::Child>,
    dir: std::path::PathBuf,
    port: u16,
    admin: std::net::SocketAddr,
    token: String,
}

impl Running {
    async fn start(dir: &Path, policies: &str) -> Running {
        let (port, admin) = (free_port(), free_port());
        std::fs::write(dir.join("cordon.yaml"), yaml(dir, port, admin, policies)).unwrap();
        let child = spawn_cordon(&dir.join("cordon.yaml"), port, &[]).await;
        Running {
            child: Some(child),
            dir: dir.to_path_buf(),
            port,
            admin: std::net::SocketAddr::from(([127, 0, 0, 1], admin)),
            token: crate::rigs::control::token(dir),
        }
    }

    /// Write the same configuration with other `policies`, and reload it.
    async fn reload(&self, policies: &str) {
        let text = yaml(&self.dir, self.port, self.admin.port(), policies);
        std::fs::write(self.dir.join("cordon.yaml"), text).unwrap();
        let (status, v) = self.call("POST", "/v1/reload", &Value::Null).await;
        assert_eq!(status, 200, "{v}");
    }

    async fn call(&self, method: &str, path: &str, body: &Value) -> (u16, Value) {
        // Null: no body at all.
        let body = if body.is_null() {
            String::new()
        } else {
            body.to_string()
        };
        let (status, _, text) = admin_request(self.admin, method, path, Some(&self.token), &body).await;
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// The operational log so far, once cordon is stopped.
    fn stop(&mut self) -> String {
        let mut child = self.child.take().unwrap();
        child.kill().unwrap();
        let out = child.timed_wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.timed_wait();
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn policies_in_report_mode_are_named_at_start_and_when_a_reload_puts_them_there() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (a, b, c) = ("a.test", "b.test", "c.test");
    let mut cordon = Running::start(
        d,
        &[
            policy("audit", "report", a),
            policy("web", "enforce", b),
            policy("ci", "report", c),
        ]
        .concat(),
    )
    .await;
    // web newly in report mode: named, and only it.
    cordon
        .reload(
            &[
                policy("audit", "report", a),
                policy("web", "report", b),
                policy("ci", "report", c),
            ]
            .concat(),
        )
        .await;
    // Nothing newly in report mode (a rule changes): nothing said.
    cordon
        .reload(
            &[
                policy("audit", "report", "x.test"),
                policy("web", "report", b),
                policy("ci", "report", c),
            ]
            .concat(),
        )
        .await;
    // audit enforces, then reports again: named again; and a new policy in report mode is named too.
    cordon
        .reload(
            &[
                policy("audit", "enforce", a),
                policy("web", "report", b),
                policy("ci", "report", c),
            ]
            .concat(),
        )
        .await;
    cordon
        .reload(
            &[
                policy("audit", "report", a),
                policy("web", "report", b),
                policy("ci", "report", c),
                policy("new", "report", "n.test"),
            ]
            .concat(),
        )
        .await;
    let log = cordon.stop();
    let warned: Vec<&str> = log.lines().filter(|l| l.contains("policies in report mode")).collect();
    assert_eq!(warned.len(), 3, "{log}");
    for (line, names) in warned.iter().zip(["audit, ci", "web", "audit, new"]) {
        assert!(line.contains("WARN"), "{line}");
        assert!(
            line.contains(&format!(
                "policies in report mode: {names}: every request of their sandboxes is allowed"
            )),
            "{line}"
        );
    }
    assert_eq!(log.matches("configuration reloaded").count(), 4, "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_renewal_that_would_shorten_a_sandbox_is_refused_with_both_expiries() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cordon = Running::start(d, &policy("web", "enforce", "a.test")).await;
    let (status, created) = cordon
        .call(
            "POST",
            "/v1/sandboxes",
            &json!({"user": "u", "policy": "web", "ttl": "3h"}),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_string();
    let expires = created["expires_at"].as_str().unwrap().to_string();
    let renew = format!("/v1/sandboxes/{id}/renew");
    // Shorter than the 3 h left: asked for, and by default (control.default_ttl, 1 h).
    for body in [json!({"ttl": "10m"}), json!({"ttl": "2h"}), Value::Null] {
        let (status, v) = cordon.call("POST", &renew, &body).await;
        assert_eq!(status, 409, "{body}: {v}");
        let e = &v["error"];
        assert_eq!(e["code"], "renewal_shorter", "{v}");
        assert_eq!(e["expires_at"], expires.as_str(), "{v}");
        let asked = e["asked_expires_at"].as_str().unwrap();
        assert!(asked < expires.as_str(), "{v}");
        let message = e["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("expires at {expires}")) && message.contains(asked),
            "{message}"
        );
        assert!(message.contains("a renewal never shortens a sandbox"), "{message}");
    }
    // Nothing changed.
    let (_, shown) = cordon.call("GET", &format!("/v1/sandboxes/{id}"), &Value::Null).await;
    assert_eq!(shown["expires_at"], expires.as_str(), "{shown}");
    // Longer: renewed.
    let (status, v) = cordon.call("POST", &renew, &json!({"ttl": "5h"})).await;
    assert_eq!(status, 200, "{v}");
    assert!(v["expires_at"].as_str().unwrap() > expires.as_str(), "{v}");
    // The command line says why, and fails.
    let out = Command::new(BIN)
        .args(["sandbox", "renew", &id, "--ttl", "1m", "--config"])
        .arg(d.join("cordon.yaml"))
        .env_remove("CORDON_ADMIN_TOKEN")
        .env_remove("CORDON_ADMIN_URL")
        .timed_output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("a renewal never shortens a sandbox"), "{err}");
}
