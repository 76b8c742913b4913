//! `on_violation` through the binary, as a compromised sandbox would probe: a run-time sandbox that keeps asking
//! for the cloud metadata address is revoked at the threshold (its next request is refused as revoked) while a
//! well-behaved sandbox of the same policy beside it is untouched; the action is audited, counted, shown by the
//! admin API and announced through the webhook with the records that triggered it. A declared sandbox probing
//! hosts its policy does not name is held: its next request waits for a person's approval, a tunnel is refused,
//! and the admin API lifts the hold.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::rigs::control::admin;
use crate::rigs::process::curl;
use crate::rigs::replicas::{Replica, create, curl_head, curl_status, replica_with, upstream};
use crate::rigs::wait::Within;
use crate::rigs::webhook::{SECRET, receiver};

/// curl through `r` as `who` to `url` (plain HTTP or HTTPS): (status, x-cordon-reason).
fn probe(r: &Replica, who: (&str, &str), ca: Option<&Path>, url: &str) -> (u16, String) {
    let head = curl_head(r, who, ca, url);
    (head.status(), head.header("x-cordon-reason"))
}

/// A cordon whose policy `web` revokes at 3 metadata refusals and whose policy `everything` (sandbox `sb2`,
/// token `tok2`) holds at 2 refusals by the policy; approvals announced to the receiver on `hook`.
async fn cordon(d: &Path, up: u16, hook: u16) -> Replica {
    let secret = d.join("hook-secret");
    std::fs::write(&secret, SECRET).unwrap();
    let top = format!(
        "approval:\n  timeout: 20s\n  webhook: {{ url: \"http://127.0.0.1:{hook}/hook\", secret: {{ file: {} }} }}\n",
        secret.display()
    );
    replica_with(d, "v", up, false, &top, |yaml| {
        yaml.replace(
            "  web:\n    allow:\n",
            "  web:\n    on_violation: { metadata: 3, window: 1m, action: revoke }\n    allow:\n",
        )
        .replace(
            "  everything:\n    mode: report\n    allow: []\n",
            "  everything:\n    on_violation: { denied: 2, action: hold }\n    allow:\n      - { host: allowed.test, \
             ports: [{UP}] }\n      - { host: pinned.test, ports: [{UP}], tls: tunnel }\n",
        )
        .replace("{UP}", &up.to_string())
    })
    .await
}

/// The CA of the declared sandbox `id`, exported with `cordon ca export` into `d`.
fn declared_ca(r: &Replica, d: &Path, id: &str) -> std::path::PathBuf {
    let ca = d.join(format!("{id}-ca.pem"));
    let out = std::process::Command::new(crate::rigs::process::BIN)
        .args(["ca", "export", "--sandbox", id, "--config"])
        .arg(&r.path)
        .timed_output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::write(&ca, out.stdout).unwrap();
    ca
}

/// A [`cordon`] in a folder of its own, with its upstream and the receiver of its webhook.
struct Rig {
    dir: tempfile::TempDir,
    _up: crate::rigs::upstreams::Upstream,
    port: u16,
    hooks: tokio::sync::mpsc::UnboundedReceiver<(String, Value)>,
    r: Replica,
}

async fn rig() -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let up = upstream(dir.path()).await;
    let port = up.addr.port();
    let (hook, hooks) = receiver().await;
    let r = cordon(dir.path(), port, hook).await;
    Rig {
        dir,
        _up: up,
        port,
        hooks,
        r,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sandbox_probing_for_metadata_is_revoked_and_its_neighbour_is_untouched() {
    let Rig {
        dir,
        _up,
        port,
        mut hooks,
        r,
    } = rig().await;
    let d = dir.path();
    let (bad, bad_cred, bad_ca) = create(&r, d).await;
    let (good, good_cred, good_ca) = create(&r, d).await;
    let ok = format!("https://allowed.test:{port}/hello");
    assert_eq!(curl_status(&r, &bad, &bad_cred, &bad_ca, &ok), 200);

    // Three ways to the metadata service, each refused: the address, the name, and the address hidden in an
    // IPv4-mapped IPv6 literal. The third reaches the threshold.
    for url in [
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://[::ffff:169.254.169.254]/latest/api/token",
    ] {
        let (status, reason) = probe(&r, (&bad, &bad_cred), None, url);
        assert_eq!(status, 403, "{url}: {reason}");
        // The well-behaved neighbour keeps working in between.
        assert_eq!(curl_status(&r, &good, &good_cred, &good_ca, &ok), 200);
    }
    // Revoked: refused as revoked from now on (407: its credential is no longer good).
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let (status, reason) = probe(&r, (&bad, &bad_cred), Some(&bad_ca), &ok);
        if status == 407 {
            assert_eq!(reason, "auth_revoked");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never revoked: {status} {reason}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(curl_status(&r, &good, &good_cred, &good_ca, &ok), 200);
    let (status, v) = admin(
        r.admin_port,
        &r.admin_token(),
        "GET",
        &format!("/v1/sandboxes/{bad}"),
        "",
    )
    .await;
    assert_eq!(status, 200);
    assert!(v["revoked_at"].is_string(), "{v}");

    // Announced with the records that triggered it.
    let (event, body) = tokio::time::timeout(Duration::from_secs(10), hooks.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(event, "sandbox.violation");
    assert_eq!(
        (&body["sandbox"], &body["kind"], &body["action"], &body["count"]),
        (
            &Value::from(bad.clone()),
            &Value::from("metadata"),
            &Value::from("revoke"),
            &Value::from(3)
        )
    );
    let records = body["records"].as_array().unwrap();
    assert_eq!(records.len(), 3, "{body}");
    assert!(
        records
            .iter()
            .all(|r| r["decision"] == "deny" && r["sandbox"] == bad.as_str())
    );
    // Counted.
    let (_, _, metrics) = crate::rigs::control::admin_request(r.admin_addr(), "GET", "/metrics", None, "").await;
    assert!(
        metrics.contains("cordon_violations_total{kind=\"metadata\",action=\"revoke\"} 1"),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_declared_sandbox_probing_unlisted_hosts_is_held_until_lifted() {
    let Rig {
        dir,
        _up,
        port,
        mut hooks,
        r,
    } = rig().await;
    let d = dir.path();
    let ca = declared_ca(&r, d, "sb2");
    let ok = format!("https://allowed.test:{port}/hello");
    assert_eq!(probe(&r, ("sb2", "tok2"), Some(&ca), &ok).0, 200);
    for host in ["exfil-1.example", "exfil-2.example"] {
        let (status, reason) = probe(&r, ("sb2", "tok2"), None, &format!("http://{host}/"));
        assert_eq!((status, reason.as_str()), (403, "no_rule"));
    }
    let (event, body) = tokio::time::timeout(Duration::from_secs(10), hooks.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (event.as_str(), &body["action"]),
        ("sandbox.violation", &Value::from("hold"))
    );
    let (_, v) = admin(r.admin_port, &r.admin_token(), "GET", "/v1/sandboxes/sb2", "").await;
    assert_eq!(v["violation"], "held", "{v}");

    // Held: the next allowed request waits for a person (announced as an approval), and is let through.
    let (r2, ca2, ok2) = (r.proxy, ca.clone(), ok.clone());
    let waiting = tokio::task::spawn_blocking(move || {
        let out = curl()
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20"])
            .args(["-x", &format!("http://sb2:tok2@127.0.0.1:{r2}")])
            .arg("--cacert")
            .arg(&ca2)
            .arg(&ok2)
            .timed_output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    });
    let (event, body) = tokio::time::timeout(Duration::from_secs(10), hooks.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(event, "approval.requested", "{body}");
    let id = body["approval"]["id"].as_str().unwrap().to_string();
    let (status, _) = admin(
        r.admin_port,
        &r.admin_token(),
        "POST",
        &format!("/v1/approvals/{id}"),
        r#"{"decision": "allow"}"#,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(waiting.await.unwrap(), "200");
    // A tunnel cordon cannot look into is refused while held: there would be no request to ask about.
    let (status, reason) = probe(&r, ("sb2", "tok2"), Some(&ca), &format!("https://pinned.test:{port}/"));
    assert_eq!((status, reason.as_str()), (403, "sandbox_held"));

    // Lifted through the admin API: served without asking again; a second lift finds nothing to lift.
    let (status, _) = admin(r.admin_port, &r.admin_token(), "DELETE", "/v1/sandboxes/sb2/hold", "").await;
    assert_eq!(status, 200);
    assert_eq!(probe(&r, ("sb2", "tok2"), Some(&ca), &ok).0, 200);
    let (status, v) = admin(r.admin_port, &r.admin_token(), "DELETE", "/v1/sandboxes/sb2/hold", "").await;
    assert_eq!(
        (status, &v["lifted"]),
        (200, &Value::from(false)),
        "lifting twice is harmless"
    );
    let (status, _) = admin(
        r.admin_port,
        &r.admin_token(),
        "DELETE",
        "/v1/sandboxes/nobody/hold",
        "",
    )
    .await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_declared_sandbox_revoked_for_violations_is_refused_until_lifted() {
    let Rig {
        dir,
        _up,
        port,
        mut hooks,
        r,
    } = rig().await;
    let d = dir.path();
    let ca = declared_ca(&r, d, "sb1");
    let ok = format!("https://allowed.test:{port}/hello");
    assert_eq!(probe(&r, ("sb1", "tok1"), Some(&ca), &ok).0, 200);
    for _ in 0..3 {
        assert_eq!(probe(&r, ("sb1", "tok1"), None, "http://169.254.169.254/").0, 403);
    }
    let (event, body) = tokio::time::timeout(Duration::from_secs(10), hooks.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (event.as_str(), &body["sandbox"]),
        ("sandbox.violation", &Value::from("sb1"))
    );
    // Suspended: a sandbox of the configuration file cannot be revoked in the store; it is refused as revoked.
    assert_eq!(
        probe(&r, ("sb1", "tok1"), Some(&ca), &ok),
        (407, "auth_revoked".to_string())
    );
    let (_, v) = admin(r.admin_port, &r.admin_token(), "GET", "/v1/sandboxes/sb1", "").await;
    assert_eq!(v["violation"], "suspended", "{v}");
    let (status, _) = admin(r.admin_port, &r.admin_token(), "DELETE", "/v1/sandboxes/sb1/hold", "").await;
    assert_eq!(status, 200);
    assert_eq!(probe(&r, ("sb1", "tok1"), Some(&ca), &ok).0, 200);
}
