//! The control plane across processes, with the binary: a restart keeps run-time sandboxes; a second
//! replica sharing the store, key and CA folder accepts the first one's credential and honours its
//! revocation; SIGHUP reloads.

use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use cordon::cli::admin_client::{AdminClient, CreateRequest};
use secrecy::SecretString;
use serde_json::Value;

use crate::cli::spawn_cordon;
use crate::rig::{config, free_port};
use crate::tls_rig::{https_upstream, test_ca};

pub(crate) struct Replica {
    pub(crate) child: Child,
    pub(crate) proxy: u16,
    pub(crate) admin_port: u16,
    pub(crate) admin: AdminClient,
    pub(crate) path: std::path::PathBuf,
    pub(crate) yaml: String,
    pub(crate) token: String,
}

impl Replica {
    /// The admin token.
    pub(crate) fn admin_token(&self) -> String {
        self.token.clone()
    }

    /// The admin API's address.
    pub(crate) fn admin_addr(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], self.admin_port))
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The HTTPS upstream every replica reaches, its CA written to `dir/upstream-ca.pem` for them to trust.
pub(crate) async fn upstream(dir: &Path) -> crate::rig::Upstream {
    let upstream_ca = test_ca("upstream test CA");
    let up = https_upstream(
        "127.0.0.2",
        upstream_ca.server_config(&["allowed.test", "unlisted.test"]),
    )
    .await;
    std::fs::write(dir.join("upstream-ca.pem"), &upstream_ca.pem).unwrap();
    up
}

/// A cordon process on its own ports, sharing everything under `dir`.
pub(crate) async fn replica(dir: &Path, name: &str, up: u16, watch: bool) -> Replica {
    replica_with(dir, name, up, watch, "", |yaml| yaml).await
}

/// [`replica`] with `extra_top` more top-level YAML, and the whole configuration passed through `edit`.
pub(crate) async fn replica_with(
    dir: &Path,
    name: &str,
    up: u16,
    watch: bool,
    extra_top: &str,
    edit: impl Fn(String) -> String,
) -> Replica {
    let (proxy, admin) = (free_port(), free_port());
    let top = format!(
        "listen: {{ proxy: 127.0.0.1:{proxy}, admin: 127.0.0.1:{admin} }}\nca: {{ dir: {d}/cas }}\n\
         upstream: {{ extra_roots: [{d}/upstream-ca.pem] }}\nvault: {{ file: {{ path: {d}/vault.bin }} }}\n\
         control:\n  admin_token: {{ file: {d}/admin-token }}\n  signing_key: {{ file: {d}/signing-key }}\n  \
         store: {d}/cordon.db\n  watch: {watch}\n{extra_top}",
        d = dir.display()
    );
    let yaml = edit(config(up, 1, &top));
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, &yaml).unwrap();
    let mut child = spawn_cordon(&path, proxy, &[]).await;
    // cordon binds its ports before it builds its state (and writes the admin token): a connection is
    // accepted by the kernel early, so only an HTTP answer says the admin API is there.
    let mut tries = 0;
    while !answers_healthz(admin).await {
        tries += 1;
        if tries == 200 {
            let _ = child.kill();
            panic!("replica {name}: the admin API never answered on port {admin}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let token = std::fs::read_to_string(dir.join("admin-token"))
        .unwrap()
        .trim()
        .to_owned();
    let admin_port = admin;
    let admin = AdminClient::new(&format!("http://127.0.0.1:{admin}"), SecretString::from(token.clone())).unwrap();
    Replica {
        token,
        child,
        proxy,
        admin_port,
        admin,
        path,
        yaml,
    }
}

/// Whether an admin API on `port` answers `GET /healthz` with 200.
async fn answers_healthz(port: u16) -> bool {
    use tokio::io::AsyncWriteExt;
    let Ok(mut s) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return false;
    };
    let ask = b"GET /healthz HTTP/1.1\r\nHost: cordon\r\nConnection: close\r\n\r\n";
    if s.write_all(ask).await.is_err() {
        return false;
    }
    let answer = tokio::time::timeout(Duration::from_secs(2), crate::rig::read_response(&mut s)).await;
    matches!(answer, Ok(Some(r)) if r.status == 200)
}

/// What curl printed of a response's head (`-D -`), the last one when a proxy answered first.
pub(crate) struct Head(String);

impl Head {
    /// The status of the last response (0 when curl got none).
    pub(crate) fn status(&self) -> u16 {
        self.0
            .lines()
            .rev()
            .find(|l| l.starts_with("HTTP/"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }

    /// The value of header `name` (lower case), or "".
    pub(crate) fn header(&self, name: &str) -> String {
        self.0
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
            })
            .unwrap_or_default()
    }
}

/// curl through a replica as `who`, trusting `ca` if given: the head it printed.
pub(crate) fn curl_head(r: &Replica, who: (&str, &str), ca: Option<&Path>, url: &str) -> Head {
    let mut cmd = crate::cli::curl();
    cmd.args(["-s", "-o", "/dev/null", "-D", "-", "--max-time", "10"])
        .args(["-x", &format!("http://{}:{}@127.0.0.1:{}", who.0, who.1, r.proxy)]);
    if let Some(ca) = ca {
        cmd.arg("--cacert").arg(ca);
    }
    Head(String::from_utf8_lossy(&cmd.arg(url).output().unwrap().stdout).into_owned())
}

/// curl through a replica as `id:credential`; the HTTP status (0 when curl itself failed, e.g. on a 407).
pub(crate) fn curl_status(r: &Replica, id: &str, credential: &str, ca: &Path, url: &str) -> u16 {
    let out = crate::cli::curl()
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10"])
        .args(["-x", &format!("http://{id}:{credential}@127.0.0.1:{}", r.proxy)])
        .arg("--cacert")
        .arg(ca)
        .arg(url)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(0)
}

pub(crate) async fn create(r: &Replica, dir: &Path) -> (String, String, std::path::PathBuf) {
    let req = CreateRequest {
        user: "alice".into(),
        policy: "web".into(),
        id: None,
        ttl: Some("1h".into()),
        labels: Default::default(),
        source_cidrs: Vec::new(),
    };
    let v: Value = r.admin.create(&req).await.unwrap();
    let id = v["id"].as_str().unwrap().to_string();
    let ca = dir.join(format!("{id}.pem"));
    std::fs::write(&ca, v["ca_certificate"].as_str().unwrap()).unwrap();
    (id, v["credential"].as_str().unwrap().to_string(), ca)
}

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
        let ok = Command::new("kill")
            .args(["-HUP", &r.child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
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
    let out = Command::new(crate::cli::BIN)
        .args(["sandbox", "--config"])
        .arg(&r.path)
        .args(args)
        .env_remove("CORDON_ADMIN_TOKEN")
        .env_remove("CORDON_ADMIN_URL")
        .output()
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
    let run = Command::new("sh").args(["-c", &script]).output().unwrap();
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
    let out = Command::new(crate::cli::BIN)
        .args(["sandbox", "--admin", "http://127.0.0.1:1", "--token-file"])
        .arg(dir.path().join("admin-token"))
        .arg("list")
        .output()
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
    let (code, out, err) = crate::cli::cordon(&["explain", "--config", config, "--sandbox", &id, &url]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("verdict  ALLOW") && out.contains("policy \"web\""),
        "{out}"
    );
    assert!(err.contains("created at run time"), "{err}");
    let (code, out, _) = crate::cli::cordon(&[
        "explain",
        "--config",
        config,
        "--sandbox",
        &id,
        "https://unlisted.test/",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("verdict  DENY"), "{out}");
    let (code, _, err) = crate::cli::cordon(&["explain", "--config", config, "--sandbox", "sb-nobody", &url]);
    assert_eq!(code, 2, "{err}");

    // ca export and rotate go through the admin API too; the running cordon uses the new CA at once.
    let (code, exported, err) = crate::cli::cordon(&["ca", "export", "--config", config, "--sandbox", &id]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(exported.trim(), std::fs::read_to_string(&ca).unwrap().trim());
    assert_eq!(curl_status(&r, &id, &cred, &ca, &url), 200);
    let (code, rotated, err) = crate::cli::cordon(&["ca", "rotate", "--config", config, "--sandbox", &id]);
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
    let (_, again, _) = crate::cli::cordon(&["ca", "export", "--config", config, "--sandbox", &id]);
    assert_eq!(again.trim(), rotated.trim());
    // The endpoint refuses what is not a live sandbox.
    let token = r.admin_token();
    let (status, _, _) = crate::control_rig::admin_request(
        r.admin_addr(),
        "POST",
        "/v1/sandboxes/sb-nobody/rotate-ca",
        Some(&token),
        "",
    )
    .await;
    assert_eq!(status, 404);
}
