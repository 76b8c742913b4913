//! Control-plane hardening, tried the way an attacker would, through the binary: revoked credentials after
//! a restart or a lost store, ids that collide with cordon's own files, creation that fails half-way, and
//! cordon's own listeners as destinations.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::rigs::control::{admin, token};
use crate::rigs::ports::free_port;
use crate::rigs::process::BIN;
use crate::rigs::proxy::config;
use crate::rigs::replicas::{create, curl_status, replica, upstream};
use crate::rigs::wait::{TimedChild, Within};

fn listed(v: &Value) -> Vec<String> {
    v["sandboxes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["id"].as_str().map(String::from))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_revoked_credential_is_never_accepted_again() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A persistent key without a persistent store would forget revocations at the next start: refused, with
    // the fix named, by `cordon check` and by `cordon run`.
    let yaml = config(
        1,
        1,
        &format!("control:\n  signing_key: {{ file: {}/signing-key }}\n", d.display()),
    );
    let path = d.join("no-store.yaml");
    std::fs::write(&path, yaml).unwrap();
    for cmd in ["check", "run"] {
        let out = std::process::Command::new(BIN)
            .args([cmd, "--config"])
            .arg(&path)
            .timed_output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "cordon {cmd} accepted a signing key without a store"
        );
        assert!(
            err.contains("control.signing_key") && err.contains("control.store"),
            "{cmd}: {err}"
        );
    }

    // With a store: revoked, restarted, replayed: refused.
    let up = upstream(d).await;
    let port = up.addr.port();
    let url = format!("https://allowed.test:{port}/hello");
    let a = replica(d, "a", port, true).await;
    let (revoked, rcred, rca) = create(&a, d).await;
    let (kept, kcred, kca) = create(&a, d).await;
    assert_eq!(curl_status(&a, &revoked, &rcred, &rca, &url), 200);
    a.admin.revoke(&revoked).await.unwrap();
    drop(a);
    let a = replica(d, "a", port, true).await;
    assert_eq!(curl_status(&a, &revoked, &rcred, &rca, &url), 0, "407 after a restart");
    assert_eq!(curl_status(&a, &kept, &kcred, &kca, &url), 200);
    drop(a);

    // The store is lost (deleted, or a fresh one put in its place) but the key is not: a credential whose
    // sandbox the store does not know is refused, however well it is signed.
    for f in ["cordon.db", "cordon.db-wal", "cordon.db-shm"] {
        let _ = std::fs::remove_file(d.join(f));
    }
    let a = replica(d, "a", port, true).await;
    assert_eq!(
        curl_status(&a, &kept, &kcred, &kca, &url),
        0,
        "a credential the store does not know was accepted"
    );
    assert_eq!(curl_status(&a, &revoked, &rcred, &rca, &url), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn ids_that_name_cordons_files_are_refused_and_creation_is_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let up = upstream(d).await;
    let r = replica(d, "ids", up.addr.port(), true).await;
    let tok = token(d);
    let port = r.admin_port;
    for id in [".lock", ".", "..", ".hidden"] {
        let body = format!(r#"{{"user": "mallory", "policy": "web", "id": "{id}"}}"#);
        let (status, v) = admin(port, &tok, "POST", "/v1/sandboxes", &body).await;
        assert_eq!(status, 422, "{id}: {v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains("not starting with '.'"),
            "{v}"
        );
    }
    for (method, path) in [
        ("GET", "/v1/sandboxes/.lock"),
        ("DELETE", "/v1/sandboxes/.lock"),
        ("POST", "/v1/sandboxes/.lock/renew"),
        ("POST", "/v1/sandboxes/.lock/credentials"),
    ] {
        let (status, v) = admin(port, &tok, method, path, "{}").await;
        assert_eq!(status, 422, "{method} {path}: {v}");
    }
    let (_, all) = admin(port, &tok, "GET", "/v1/sandboxes", "").await;
    assert!(!listed(&all).iter().any(|id| id.starts_with('.')), "{all}");

    // The CA cannot be made (a file stands where its folder goes): 500, and no sandbox is left behind.
    let blocker = d.join("cas").join("blocked");
    std::fs::create_dir_all(blocker.parent().unwrap()).unwrap();
    std::fs::write(&blocker, "not a folder").unwrap();
    let body = r#"{"user": "alice", "policy": "web", "id": "blocked"}"#;
    let (status, v) = admin(port, &tok, "POST", "/v1/sandboxes", body).await;
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (500, Some("ca_unavailable")),
        "{v}"
    );
    let (_, all) = admin(port, &tok, "GET", "/v1/sandboxes", "").await;
    assert!(
        !listed(&all).contains(&"blocked".to_string()),
        "a sandbox without a CA was stored: {all}"
    );
    let (status, _) = admin(port, &tok, "GET", "/v1/sandboxes/blocked", "").await;
    assert_eq!(status, 404);
    // Once the way is clear, the same id is created whole.
    std::fs::remove_file(&blocker).unwrap();
    let (status, v) = admin(port, &tok, "POST", "/v1/sandboxes", body).await;
    assert_eq!(status, 201, "{v}");
    assert!(v["ca_certificate"].as_str().unwrap().contains("BEGIN CERTIFICATE"));
}

#[tokio::test(flavor = "multi_thread")]
async fn every_listener_of_cordon_is_its_own_address() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (proxy, admin_port, transparent, dns) = (free_port(), free_port(), free_port(), free_port());
    let top = format!(
        "listen: {{ proxy: 127.0.0.1:{proxy}, admin: 127.0.0.1:{admin_port}, transparent: 127.0.0.1:{transparent}, \
         dns: 127.0.0.1:{dns} }}\nca: {{ dir: {d}/cas }}\ncontrol:\n  admin_token: {{ file: {d}/admin-token }}\n",
        d = d.display()
    );
    let path = d.join("cordon.yaml");
    std::fs::write(&path, config(1, 1, &top)).unwrap();
    let mut child = crate::rigs::process::spawn_cordon(&path, proxy, &[]).await;
    // sb2 may go anywhere (report mode) and loopback is opened by allow_cidrs: only self_address stops it.
    for (what, port) in [
        ("proxy", proxy),
        ("admin", admin_port),
        ("transparent", transparent),
        ("dns", dns),
    ] {
        let mut c = crate::rigs::process::curl();
        c.args(["-s", "--max-time", "5"])
            .args(["-x", &format!("http://sb2:tok2@127.0.0.1:{proxy}")])
            .arg(format!("http://127.0.0.1:{port}/"));
        let r = crate::rigs::curl::run(c);
        assert_eq!(
            (r.version.as_str(), r.status, r.reason()),
            ("1.1", 403, "self_address"),
            "{what} listener on {port}: {r}"
        );
    }
    let _ = child.kill();
    let _ = child.timed_wait();
    tokio::time::sleep(Duration::from_millis(10)).await;
}

/// `cordon ARGS` with a deadline: (exit success, stderr). A cordon that keeps running past it is killed and
/// counts as success (it accepted what it was given).
fn cordon_for_a_while(args: &[&str], config: &Path) -> (bool, String) {
    let mut child = std::process::Command::new(BIN)
        .args(args)
        .arg("--config")
        .arg(config)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    for _ in 0..100 {
        if child.try_wait().unwrap().is_some() {
            let out = child.timed_wait_with_output().unwrap();
            return (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let out = child.timed_wait_with_output().unwrap();
    (true, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn owner(path: &Path, uid: u32) {
    for entry in walk(path) {
        std::os::unix::fs::lchown(&entry, Some(uid), Some(uid)).unwrap();
    }
}

fn walk(path: &Path) -> Vec<std::path::PathBuf> {
    let mut all = vec![path.to_path_buf()];
    if path.is_dir() {
        for e in std::fs::read_dir(path).unwrap() {
            all.extend(walk(&e.unwrap().path()));
        }
    }
    all
}

#[tokio::test(flavor = "multi_thread")]
async fn folders_another_user_owns_or_can_write_are_refused() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test makes folders owned by another user: run it as root (CI does)"
    );
    const NOBODY: u32 = 65534;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    mode(d, 0o755);
    let port = free_port();
    let write = |name: &str, top: &str| {
        let path = d.join(name);
        let top = format!(
            "listen: {{ proxy: 127.0.0.1:{port} }}\nca: {{ dir: {}/cas }}\n{top}",
            d.display()
        );
        std::fs::write(&path, config(1, 1, &top)).unwrap();
        path
    };
    let plain = write("plain.yaml", "");
    let export = ["ca", "export", "--sandbox", "sb1"];
    let (ok, err) = cordon_for_a_while(&export, &plain);
    assert!(ok, "{err}");
    let cas = d.join("cas");

    // ca.dir writable by others (as /tmp is): someone could plant a sandbox's CA in it.
    mode(&cas, 0o1777);
    for args in [&export[..], &["run"]] {
        let (ok, err) = cordon_for_a_while(args, &plain);
        assert!(
            !ok && err.contains("ca.dir") && err.contains("chmod go-w"),
            "{args:?}: {err}"
        );
    }
    mode(&cas, 0o700);

    // A sandbox's CA folder (and CA) that another user made: never adopted.
    owner(&cas.join("sb1"), NOBODY);
    for args in [&export[..], &["run"]] {
        let (ok, err) = cordon_for_a_while(args, &plain);
        assert!(
            !ok && err.contains("belongs to uid 65534") && err.contains("chown"),
            "{args:?}: {err}"
        );
    }
    owner(&cas.join("sb1"), 0);
    assert!(cordon_for_a_while(&export, &plain).0);

    // The vault's folder, owned by another user.
    let vault = d.join("vault");
    std::fs::create_dir(&vault).unwrap();
    mode(&vault, 0o700);
    owner(&vault, NOBODY);
    let with_vault = write(
        "vault.yaml",
        &format!(
            "vault: {{ file: {{ path: {}/vault/v.bin }} }}\ncontrol:\n  admin_token: {{ vault: admin-token }}\n",
            d.display()
        ),
    );
    let (ok, err) = cordon_for_a_while(&["run"], &with_vault);
    assert!(!ok && err.contains("vault.file.path") && err.contains("65534"), "{err}");

    // The store's folder, writable by everyone.
    let state = d.join("state");
    std::fs::create_dir(&state).unwrap();
    mode(&state, 0o777);
    let with_store = write(
        "store.yaml",
        &format!("control:\n  store: {}/state/cordon.db\n", d.display()),
    );
    let (ok, err) = cordon_for_a_while(&["run"], &with_store);
    assert!(
        !ok && err.contains("control.store") && err.contains("writable by group or others"),
        "{err}"
    );
    mode(&state, 0o700);
    let (ok, err) = cordon_for_a_while(&["run"], &with_store);
    assert!(ok, "a private store folder was refused: {err}");
}
