//! Rotation, retention and reopening of the audit file, through the binary and under load: as many records as
//! requests across every rotated (compressed) file, one chain through all of them, and an external logrotate's
//! rename followed by SIGUSR1.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::rigs::process::Signal;
use crate::rigs::process::{BIN, spawn_cordon};
use crate::rigs::wait::Within;

/// `n` requests from `tasks` concurrent clients, each on its own connection, each answered 407 (one record).
async fn load(port: u16, tasks: usize, n: usize) {
    let mut all = Vec::new();
    for t in 0..tasks {
        all.push(tokio::spawn(async move {
            for i in 0..n / tasks {
                let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
                let req =
                    format!("GET http://h{t}-{i}.test/ HTTP/1.1\r\nHost: h{t}-{i}.test\r\nConnection: close\r\n\r\n");
                s.write_all(req.as_bytes()).await.unwrap();
                let mut answer = Vec::new();
                crate::rigs::wait::within(
                    &format!("cordon's answer on 127.0.0.1:{port}"),
                    std::time::Duration::from_secs(30),
                    s.read_to_end(&mut answer),
                )
                .await
                .unwrap();
                assert!(
                    answer.starts_with(b"HTTP/1.1 407"),
                    "{}",
                    String::from_utf8_lossy(&answer)
                );
            }
        }));
    }
    for t in all {
        t.await.unwrap();
    }
}

/// The audit files in `dir` (the current one and the rotated ones).
fn audit_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with("audit.jsonl"))
        .collect();
    files.sort();
    files
}

/// The lines of `path`, decompressed when it is gzip.
fn lines(path: &Path) -> Vec<String> {
    let raw = std::fs::read(path).unwrap();
    let text = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut s = String::new();
        flate2::read::GzDecoder::new(&raw[..]).read_to_string(&mut s).unwrap();
        s
    } else {
        String::from_utf8(raw).unwrap()
    };
    text.lines().map(str::to_string).collect()
}

fn requests(files: &[PathBuf]) -> usize {
    files
        .iter()
        .flat_map(|f| lines(f))
        .filter(|l| l.contains("\"status\":407"))
        .count()
}

fn verify(config: &Path, files: &[PathBuf]) -> (i32, String) {
    let out = Command::new(BIN)
        .args(["audit", "verify", "--config"])
        .arg(config)
        .args(files)
        .timed_output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn config(dir: &Path, port: u16, extra: &str) -> PathBuf {
    let d = dir.display();
    let path = dir.join("cordon.yaml");
    std::fs::write(
        &path,
        format!(
            "listen: {{ proxy: 127.0.0.1:{port} }}\nca: {{ dir: {d}/cas }}\ncontrol: {{ watch: false }}\naudit:\n  \
             path: {d}/audit.jsonl\n  signing_key: {{ file: {d}/audit-key }}\n{extra}"
        ),
    )
    .unwrap();
    path
}

async fn stop(child: std::process::Child) {
    let out = crate::rigs::process::signal_and_wait(child, Signal::SIGTERM).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[tokio::test(flavor = "multi_thread")]
async fn rotation_under_load_keeps_every_record_in_one_verified_chain() {
    let dir = tempfile::tempdir().unwrap();
    let port = crate::rigs::ports::free_port();
    let config = config(dir.path(), port, "  rotate: { size: 64KiB }\n");
    let child = spawn_cordon(&config, port, &[]).await;
    load(port, 20, 3000).await;
    stop(child).await;
    let files = audit_files(dir.path());
    let gz = files.iter().filter(|f| f.to_string_lossy().ends_with(".gz")).count();
    assert!(gz >= 10, "rotated and compressed: {files:?}");
    assert!(
        !files.iter().any(|f| f.to_string_lossy().contains("partial")),
        "{files:?}"
    );
    assert_eq!(
        requests(&files),
        3000,
        "as many records as requests across {} files",
        files.len()
    );
    crate::rigs::audit::assert_schema(&dir.path().join("audit.jsonl"));
    let (code, out) = verify(&config, &files);
    assert_eq!(code, 0, "{out}");
    // A rotated file given alone ends with the checkpoint that promises a next file: verify cannot tell a file not
    // given from a file deleted, and says both (the current file deleted: tests/it/audit/truncation.rs).
    let (code, out) = verify(&config, &files[1..2]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("was deleted or emptied, or was not given"), "{out}");
    assert_eq!(out.matches("TAMPERED").count(), 2, "that, and the verdict: {out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn retention_keeps_the_newest_files_and_sigusr1_reopens_after_an_external_rename() {
    let dir = tempfile::tempdir().unwrap();
    let port = crate::rigs::ports::free_port();
    let config = config(
        dir.path(),
        port,
        "  rotate: { size: 16KiB }\n  retain: { files: 2 }\n  compress: false\n",
    );
    let child = spawn_cordon(&config, port, &[]).await;
    load(port, 4, 400).await;
    // An external logrotate: rename, then SIGUSR1; cordon goes on in a new file at the path.
    std::fs::rename(dir.path().join("audit.jsonl"), dir.path().join("moved-away.jsonl")).unwrap();
    crate::rigs::process::signal(child.id(), Signal::SIGUSR1).unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    load(port, 4, 20).await;
    stop(child).await;
    let files = audit_files(dir.path());
    let rotated: Vec<&PathBuf> = files
        .iter()
        .filter(|f| f.file_name().unwrap() != "audit.jsonl")
        .collect();
    assert_eq!(rotated.len(), 2, "audit.retain.files keeps 2: {files:?}");
    assert!(
        requests(&[dir.path().join("audit.jsonl")]) == 20,
        "the reopened file has the later records"
    );
    // What is left still verifies: the chain runs from the oldest kept file through the moved one to the end.
    let mut kept = files.clone();
    kept.push(dir.path().join("moved-away.jsonl"));
    let (code, out) = verify(&config, &kept);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("removed by retention"), "{out}");
}
