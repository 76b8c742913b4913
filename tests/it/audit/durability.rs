//! What the audit trail can lose, through the binary (the contract in docs/src/audit.md): cordon killed outright
//! under load still has the record of every request answered more than a moment before the kill, and goes on
//! with the same chain when it starts again; a disk that fills makes cordon refuse requests (503
//! `audit_unavailable`) instead of serving them unrecorded, report it, and recover by itself when the disk
//! does, every record kept.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::rigs::audit::{records, setup};
use crate::rigs::client::{auth, read_response};
use crate::rigs::process::Signal;
use crate::rigs::process::spawn_cordon;
use crate::rigs::upstreams::upstream;
use crate::rigs::wait::Within;

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
    let out = crate::rigs::process::signal_and_wait(child, Signal::SIGKILL).await;
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
    let out = crate::rigs::process::signal_and_wait(child, Signal::SIGTERM).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (code, report) = c.verify(&[&audit]);
    assert_eq!(code, 0, "{report}");
    crate::rigs::audit::assert_schema(&audit);
}

/// A small tmpfs mounted at a folder for the test, unmounted when dropped.
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount(at: &Path, size: &str) -> SmallDisk {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "cordon-test-disk"])
            .arg(at)
            .timed_status()
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
        let _ = Command::new("umount").arg("-l").arg(&self.0).timed_status();
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
    let out = crate::rigs::process::signal_and_wait(child, Signal::SIGTERM).await;
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
    crate::rigs::audit::assert_schema(&audit);
}
