//! What the audit trail can lose, through the binary (the contract in docs/audit.md): cordon killed outright
//! under load still has the record of every request answered more than a moment before the kill, and goes on
//! with the same chain when it starts again; a disk that fills makes cordon refuse requests (503
//! `audit_unavailable`) instead of serving them unrecorded, report it, and recover by itself when the disk
//! does, every record kept.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::cli::{BIN, spawn_cordon};
use crate::control_rig::admin_request;
use crate::rig::{auth, free_port, hash, read_response, upstream};

pub(crate) struct Cordon {
    pub(crate) config: PathBuf,
    pub(crate) proxy: u16,
    admin: u16,
    up: u16,
    dir: PathBuf,
}

/// A configuration for one sandbox (`sb1`, token `tok1`) allowed to `allowed.test` (the upstream on
/// 127.0.0.2) with no rate to speak of, its audit file at `audit`, `audit_extra` more keys of `audit:` (flow
/// style, each followed by a comma).
pub(crate) fn setup(dir: &Path, audit: &Path, up: u16, audit_extra: &str) -> Cordon {
    let (proxy, admin) = (free_port(), free_port());
    let d = dir.display();
    let yaml = format!(
        "listen: {{ proxy: 127.0.0.1:{proxy}, admin: 127.0.0.1:{admin} }}\nca: {{ dir: {d}/cas }}\n\
         network: {{ allow_cidrs: [127.0.0.0/8], hosts: {{ allowed.test: 127.0.0.2 }} }}\n\
         control: {{ watch: false, admin_token: {{ file: {d}/admin-token }} }}\n\
         limits: {{ per_sandbox: {{ requests: {{ per_second: 100000, burst: 100000 }} }}, per_user: {{ requests: {{ per_second: 100000, burst: 100000 }} }} }}\n\
         audit: {{ {audit_extra} path: {}, signing_key: {{ file: {d}/audit-key }} }}\n\
         sandboxes: [{{ id: sb1, user: alice, token_sha256: {}, policy: web }}]\n\
         policies: {{ web: {{ allow: [{{ host: allowed.test, ports: [{up}] }}] }} }}\n",
        audit.display(),
        hash("tok1"),
    );
    let config = dir.join("cordon.yaml");
    std::fs::write(&config, yaml).unwrap();
    Cordon {
        config,
        proxy,
        admin,
        up,
        dir: dir.to_path_buf(),
    }
}

impl Cordon {
    /// One request for `path` on `conn` (opened when none): the status, or `None` when the connection failed.
    pub(crate) async fn get(&self, conn: &mut Option<TcpStream>, path: &str) -> Option<(u16, Option<String>)> {
        if conn.is_none() {
            *conn = TcpStream::connect(("127.0.0.1", self.proxy)).await.ok();
        }
        let stream = conn.as_mut()?;
        let req = format!(
            "GET http://allowed.test:{}{path} HTTP/1.1\r\nHost: allowed.test:{}\r\n{}\r\n",
            self.up,
            self.up,
            auth("sb1", "tok1")
        );
        if stream.write_all(req.as_bytes()).await.is_err() {
            *conn = None;
            return None;
        }
        let resp = read_response(stream).await;
        let Some(resp) = resp else {
            *conn = None;
            return None;
        };
        if resp.header("connection") == Some("close") {
            *conn = None;
        }
        Some((resp.status, resp.header("x-cordon-reason").map(str::to_string)))
    }

    pub(crate) async fn admin(&self, path: &str) -> (u16, String) {
        let token = std::fs::read_to_string(self.dir.join("admin-token")).unwrap();
        let at = SocketAddr::from(([127, 0, 0, 1], self.admin));
        let (status, _, body) = admin_request(at, "GET", path, Some(token.trim()), "").await;
        (status, body)
    }

    fn verify(&self, files: &[&Path]) -> (i32, String) {
        let out = Command::new(BIN)
            .args(["audit", "verify", "--config"])
            .arg(&self.config)
            .args(files)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code().unwrap_or(-1), text)
    }
}

/// The records in `path` (lines with a `status`), parsed.
pub(crate) fn records(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v.get("status").is_some())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_under_load_every_record_but_the_last_moments_is_kept_and_the_chain_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let up = upstream("127.0.0.2").await;
    let audit = dir.path().join("audit.jsonl");
    let c = Arc::new(setup(dir.path(), &audit, up.addr.port(), ""));
    let child = spawn_cordon(&c.config, c.proxy, &[]).await;

    // Eight clients on keep-alive connections, each request for its own path, each answer's time noted.
    let answered: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut clients = Vec::new();
    for t in 0..8 {
        let (c, answered, stop) = (c.clone(), answered.clone(), stop.clone());
        clients.push(tokio::spawn(async move {
            let mut conn = None;
            for i in 0.. {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    return;
                }
                let path = format!("/r/{t}-{i}");
                match c.get(&mut conn, &path).await {
                    Some((200, _)) => answered.lock().unwrap().push((path, Instant::now())),
                    Some((status, reason)) => panic!("{path}: {status} {reason:?}"),
                    None => tokio::time::sleep(Duration::from_millis(5)).await,
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let killed_at = Instant::now();
    let out = crate::cli::signal_and_wait(child, "-KILL").await;
    assert!(!out.status.success());
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for client in clients {
        client.await.unwrap();
    }

    // The contract: a record is written within one batch window of its response; allow 250 ms for a loaded
    // machine. Everything answered before that is in the file.
    let recorded: HashSet<String> = records(&audit)
        .iter()
        .filter(|r| r["status"] == 200)
        .map(|r| r["path"].as_str().unwrap().to_string())
        .collect();
    let answered = answered.lock().unwrap().clone();
    assert!(answered.len() > 500, "load: only {} requests answered", answered.len());
    let window = Duration::from_millis(250);
    let missing: Vec<&String> = answered
        .iter()
        .filter(|(path, at)| *at + window < killed_at && !recorded.contains(path))
        .map(|(path, _)| path)
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {} answered requests have no record: {:?}",
        missing.len(),
        answered.len(),
        &missing[..missing.len().min(10)]
    );
    let late = answered.iter().filter(|(p, _)| !recorded.contains(p)).count();
    eprintln!(
        "{} answered, {} recorded, {late} answered in the last {window:?} without a record",
        answered.len(),
        recorded.len()
    );

    // Started again, cordon continues the chain; stopped cleanly, the file verifies whole.
    let child = spawn_cordon(&c.config, c.proxy, &[]).await;
    assert_eq!(c.get(&mut None, "/after-restart").await.map(|r| r.0), Some(200));
    let out = crate::cli::signal_and_wait(child, "-TERM").await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (code, report) = c.verify(&[&audit]);
    assert_eq!(code, 0, "{report}");
    crate::audit_chain::assert_schema(&audit);
}

/// A small tmpfs mounted at a folder for the test, unmounted when dropped.
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount(at: &Path, size: &str) -> SmallDisk {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "cordon-test-disk"])
            .arg(at)
            .status()
            .unwrap();
        assert!(ok.success(), "mount a tmpfs at {}", at.display());
        SmallDisk(at.to_path_buf())
    }

    /// Fill what is left with one file; its path.
    fn fill(&self) -> PathBuf {
        use std::io::Write;
        let path = self.0.join("filler");
        let mut f = std::fs::File::create(&path).unwrap();
        let chunk = vec![0_u8; 4096];
        while f.write_all(&chunk).is_ok() {}
        path
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_disk_refuses_requests_until_it_has_room_and_no_record_is_lost() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test mounts a small tmpfs to fill: run it as root (CI does)"
    );
    let dir = tempfile::tempdir().unwrap();
    let disk = SmallDisk::mount(&dir.path().join("disk"), "1m");
    let audit = disk.0.join("audit.jsonl");
    let up = upstream("127.0.0.2").await;
    let c = setup(dir.path(), &audit, up.addr.port(), "");
    let child = spawn_cordon(&c.config, c.proxy, &[]).await;
    let (mut ok, mut refused) = (0, 0);
    let mut conn = None;
    for i in 0..20 {
        assert_eq!(c.get(&mut conn, &format!("/before/{i}")).await.unwrap().0, 200);
        ok += 1;
    }

    // The disk fills: once the audit thread's write fails, every request is refused with the reason.
    let filler = disk.fill();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        assert!(Instant::now() < deadline, "never refused while the disk was full");
        match c.get(&mut conn, &format!("/full/{}", ok + refused)).await.unwrap() {
            (200, _) => ok += 1,
            (503, reason) => {
                assert_eq!(reason.as_deref(), Some("audit_unavailable"));
                refused += 1;
                break;
            }
            other => panic!("{other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for i in 0..10 {
        let (status, reason) = c.get(&mut conn, &format!("/refused/{i}")).await.unwrap();
        assert_eq!((status, reason.as_deref()), (503, Some("audit_unavailable")));
        refused += 1;
    }
    // A tunnel is refused the same way.
    let mut s = TcpStream::connect(("127.0.0.1", c.proxy)).await.unwrap();
    let connect = format!(
        "CONNECT allowed.test:{0} HTTP/1.1\r\nHost: allowed.test:{0}\r\n{1}\r\n",
        c.up,
        auth("sb1", "tok1")
    );
    s.write_all(connect.as_bytes()).await.unwrap();
    let resp = read_response(&mut s).await.unwrap();
    assert_eq!(resp.status, 503);
    refused += 1;
    let (status, ready) = c.admin("/readyz").await;
    assert_eq!(status, 503, "{ready}");
    let ready: serde_json::Value = serde_json::from_str(&ready).unwrap();
    assert_eq!(ready["audit"]["state"], "down", "{ready}");
    assert!(
        ready["audit"]["error"].as_str().unwrap().contains("No space"),
        "{ready}"
    );
    let (_, metrics) = c.admin("/metrics").await;
    assert!(metrics.contains("cordon_audit_up 0"), "{metrics}");

    // Room again: cordon writes what it held and serves again, by itself.
    std::fs::remove_file(filler).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        assert!(Instant::now() < deadline, "never recovered after the disk had room");
        match c.get(&mut conn, &format!("/after/{}", ok + refused)).await.unwrap() {
            (200, _) => {
                ok += 1;
                break;
            }
            (503, _) => refused += 1,
            other => panic!("{other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, ready) = c.admin("/readyz").await;
    assert_eq!(status, 200, "{ready}");
    let (_, metrics) = c.admin("/metrics").await;
    assert!(metrics.contains("cordon_audit_up 1"), "{metrics}");
    let out = crate::cli::signal_and_wait(child, "-TERM").await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("audit records cannot be written"), "{stderr}");

    // Every answer has its record: the served ones (those answered while the disk was full were held and written
    // later), and each refusal as a deny with its reason; the chain verifies.
    let all = records(&audit);
    let served = all.iter().filter(|r| r["status"] == 200).count();
    let denied = all
        .iter()
        .filter(|r| {
            r["reason"] == "audit_unavailable"
                && r["decision"] == "deny"
                && r["status"] == 503
                && r["side"] == "internal"
        })
        .count();
    assert_eq!(
        (served, denied),
        (ok, refused),
        "records of served and refused requests"
    );
    let (code, report) = c.verify(&[&audit]);
    assert_eq!(code, 0, "{report}");
    crate::audit_chain::assert_schema(&audit);
}
