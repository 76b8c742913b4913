//! The control plane across processes, with the binary: a restart keeps run-time sandboxes; a second
//! replica sharing the store, key and CA folder accepts the first one's credential and honours its
//! revocation; SIGHUP reloads.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::rigs::process::Signal;
use crate::rigs::replicas::{Replica, create, curl_status, replica, upstream};
use crate::rigs::wait::Within;

#[tokio::test(flavor = "multi_thread")]
async fn replicas_share_sandboxes_and_revocations_and_a_restart_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let up = upstream(dir.path()).await;
    let port = up.addr.port();
    let url = format!("https://allowed.test:{port}/hello");

    let a = replica(dir.path(), "a", port, true).await;
    let b = replica(dir.path(), "b", port, true).await;
    let (id, cred, ca) = create(&a, dir.path()).await;
    // Minted by a, accepted by b at once (the credential carries what b needs; the CA is shared).
    assert_eq!(curl_status(&a, &id, &cred, &ca, &url), 200);
    assert_eq!(curl_status(&b, &id, &cred, &ca, &url), 200);
    // Revoked on a: b refuses within a second.
    a.admin.revoke(&id).await.unwrap();
    let start = std::time::Instant::now();
    while curl_status(&b, &id, &cred, &ca, &url) == 200 {
        assert!(
            start.elapsed() < Duration::from_millis(1500),
            "b still honours a revoked credential"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        curl_status(&a, &id, &cred, &ca, &url),
        0,
        "407 makes curl fail the CONNECT"
    );

    // A restart of a keeps what was created at run time, and the revocation.
    let (id2, cred2, ca2) = create(&a, dir.path()).await;
    drop(a);
    let a = replica(dir.path(), "a", port, true).await;
    assert_eq!(curl_status(&a, &id2, &cred2, &ca2, &url), 200);
    assert_eq!(curl_status(&a, &id, &cred, &ca, &url), 0);
    let list = a.admin.list().await.unwrap();
    let ids: Vec<&str> = list["sandboxes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["id"].as_str())
        .collect();
    assert!(ids.contains(&id.as_str()) && ids.contains(&id2.as_str()), "{list}");
    drop(b);
}

#[tokio::test(flavor = "multi_thread")]
async fn sighup_reloads_and_a_bad_file_keeps_the_running_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let up = upstream(dir.path()).await;
    let port = up.addr.port();
    let r = replica(dir.path(), "hup", port, false).await;
    let ca = dir.path().join("sb1.pem");
    std::fs::write(
        &ca,
        r.admin.show("sb1").await.unwrap()["ca_certificate"].as_str().unwrap(),
    )
    .unwrap();
    let unlisted = format!("https://unlisted.test:{port}/");
    assert_eq!(
        curl_status(&r, "sb1", "tok1", &ca, &unlisted),
        0,
        "403 before the reload"
    );
    let hup = || {
        crate::rigs::process::signal(r.child.id(), Signal::SIGHUP).unwrap();
    };
    // A broken file first: refused, cordon keeps serving.
    std::fs::write(&r.path, "policies: [").unwrap();
    hup();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        curl_status(&r, "sb1", "tok1", &ca, &format!("https://allowed.test:{port}/")),
        200
    );
    // Then a good one. (The CA was issued for the old policy's names, so the new host goes as a tunnel.)
    let added = r.yaml.replace(
        "  web:\n    allow:\n",
        &format!("  web:\n    allow:\n      - host: unlisted.test\n        ports: [{port}]\n        tls: tunnel\n"),
    );
    std::fs::write(&r.path, added).unwrap();
    hup();
    let start = std::time::Instant::now();
    let upstream_ca = dir.path().join("upstream-ca.pem");
    loop {
        if curl_status(&r, "sb1", "tok1", &upstream_ca, &unlisted) == 200 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(5), "SIGHUP did not reload");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `cordon sandbox ...` against a replica, finding the admin API and token through its configuration.
fn sandbox_cli(r: &Replica, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(crate::rigs::process::BIN)
        .args(["sandbox", "--config"])
        .arg(&r.path)
        .args(args)
        .env_remove("CORDON_ADMIN_TOKEN")
        .env_remove("CORDON_ADMIN_URL")
        .timed_output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sandbox_command_drives_the_admin_api() {
    let dir = tempfile::tempdir().unwrap();
    let up = upstream(dir.path()).await;
    let port = up.addr.port();
    let r = replica(dir.path(), "cli", port, true).await;

    let (ok, out, err) = sandbox_cli(
        &r,
        &[
            "create", "--user", "dana", "--policy", "web", "--id", "task-7", "--ttl", "20m", "--label", "team=ml",
            "--format", "export",
        ],
    );
    assert!(ok, "{err}");
    assert!(out.contains("export HTTPS_PROXY='http://task-7:ey"), "{out}");
    assert!(out.contains("export NODE_USE_ENV_PROXY='1'"), "{out}");
    // The printed environment works: source it in a shell and run curl with it.
    let ca = dir.path().join("task-7.pem");
    let (ok, shown, err) = sandbox_cli(&r, &["show", "task-7"]);
    assert!(ok, "{err}");
    let shown: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(shown["labels"]["team"], "ml");
    std::fs::write(&ca, shown["ca_certificate"].as_str().unwrap()).unwrap();
    let script = format!(
        "{out}\ncurl -sS --max-time 10 --cacert {} https://allowed.test:{port}/hello",
        ca.display()
    );
    let run = Command::new("sh").args(["-c", &script]).timed_output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));

    let (ok, table, _) = sandbox_cli(&r, &["list"]);
    assert!(
        ok && table.contains("task-7") && table.contains("dana") && table.contains("sb1"),
        "{table}"
    );
    let (ok, renewed, err) = sandbox_cli(&r, &["renew", "task-7", "--ttl", "1h"]);
    assert!(ok, "{err}");
    assert!(renewed.contains("expires_at"));
    let (ok, env, err) = sandbox_cli(&r, &["env", "task-7", "--format", "json"]);
    assert!(ok, "{err}");
    let env: Value = serde_json::from_str(&env).unwrap();
    assert!(env["HTTP_PROXY"].as_str().unwrap().starts_with("http://task-7:ey"));
    let (ok, _, err) = sandbox_cli(&r, &["revoke", "task-7"]);
    assert!(ok, "{err}");
    // Errors say what is wrong, with the server's message.
    let (ok, _, err) = sandbox_cli(&r, &["revoke", "nobody"]);
    assert!(!ok && err.contains("no sandbox \"nobody\""), "{err}");
    let (ok, _, err) = sandbox_cli(&r, &["create", "--user", "u", "--policy", "nope"]);
    assert!(!ok && err.contains("policy"), "{err}");
    let out = Command::new(crate::rigs::process::BIN)
        .args(["sandbox", "--admin", "http://127.0.0.1:1", "--token-file"])
        .arg(dir.path().join("admin-token"))
        .arg("list")
        .timed_output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("127.0.0.1:1"));
}

#[tokio::test(flavor = "multi_thread")]
async fn explain_and_ca_rotation_work_for_sandboxes_created_at_run_time() {
    let dir = tempfile::tempdir().unwrap();
    let up = upstream(dir.path()).await;
    let port = up.addr.port();
    let r = replica(dir.path(), "rt", port, false).await;
    let (id, cred, ca) = create(&r, dir.path()).await;
    let config = r.path.to_str().unwrap();
    let url = format!("https://allowed.test:{port}/hello");

    // explain finds the run-time sandbox's user and policy through the admin API.
    let (code, out, err) = crate::rigs::process::cordon(&["explain", "--config", config, "--sandbox", &id, &url]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("verdict  ALLOW") && out.contains("policy \"web\""),
        "{out}"
    );
    assert!(err.contains("created at run time"), "{err}");
    let (code, out, _) = crate::rigs::process::cordon(&[
        "explain",
        "--config",
        config,
        "--sandbox",
        &id,
        "https://unlisted.test/",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("verdict  DENY"), "{out}");
    let (code, _, err) = crate::rigs::process::cordon(&["explain", "--config", config, "--sandbox", "sb-nobody", &url]);
    assert_eq!(code, 2, "{err}");

    // ca export and rotate go through the admin API too; the running cordon uses the new CA at once.
    let (code, exported, err) = crate::rigs::process::cordon(&["ca", "export", "--config", config, "--sandbox", &id]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(exported.trim(), std::fs::read_to_string(&ca).unwrap().trim());
    assert_eq!(curl_status(&r, &id, &cred, &ca, &url), 200);
    let (code, rotated, err) = crate::rigs::process::cordon(&["ca", "rotate", "--config", config, "--sandbox", &id]);
    assert_eq!(code, 0, "{err}");
    assert_ne!(rotated.trim(), exported.trim());
    let new_ca = dir.path().join("rotated.pem");
    std::fs::write(&new_ca, &rotated).unwrap();
    assert_eq!(
        curl_status(&r, &id, &cred, &new_ca, &url),
        200,
        "the new CA is not in use"
    );
    assert_eq!(curl_status(&r, &id, &cred, &ca, &url), 0, "the old CA still verifies");
    let (_, again, _) = crate::rigs::process::cordon(&["ca", "export", "--config", config, "--sandbox", &id]);
    assert_eq!(again.trim(), rotated.trim());
    // The endpoint refuses what is not a live sandbox.
    let token = r.admin_token();
    let (status, _, _) = crate::rigs::control::admin_request(
        r.admin_addr(),
        "POST",
        "/v1/sandboxes/sb-nobody/rotate-ca",
        Some(&token),
        "",
    )
    .await;
    assert_eq!(status, 404);
}
