//! What `cordon audit verify` can tell from a crash, through the binary: lines removed from the end that a
//! signed checkpoint shipped off the machine covers (the last line, several, back to a checkpoint, in the middle
//! of a line, and cordon started again on what is left), the current file deleted or emptied after rotations, a
//! chain forged from nothing (no signed evidence, exit 4), a real crash (still unsealed, exit 3), and a log that
//! had unsigned runs before signing was turned on (it verifies, and says where signing started).

use std::path::{Path, PathBuf};

use sha2::Digest;

use crate::rigs::audit::{copy, run_once, signed_config, verify};
use crate::rigs::process::Signal;
use crate::rigs::process::{curl, spawn_cordon};
use crate::rigs::wait::Within;

/// `n` requests through the proxy on `port`, each answered 407 (one record each), to hosts named after `tag`.
fn requests(port: u16, tag: &str, n: usize) {
    for i in 0..n {
        let out = curl()
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-x"])
            .arg(format!("http://127.0.0.1:{port}"))
            .arg(format!("http://{tag}-{i}.test/"))
            .timed_output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "407");
    }
}

/// The checkpoint interval of [`run_across_a_checkpoint`]'s configuration.
const INTERVAL: &str = "3s";

/// A run that writes records on both sides of a checkpoint (due every 3s from the audit thread's start, which is
/// before cordon listens), then gets `signal`: the first records fall in the first interval, the last ones in the
/// second, before its checkpoint is due.
async fn run_across_a_checkpoint(config: &Path, port: u16, signal: Signal) {
    let child = spawn_cordon(config, port, &[]).await;
    requests(port, "before", 3);
    tokio::time::sleep(std::time::Duration::from_millis(3500)).await;
    requests(port, "after", 3);
    // Written within a batch.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    crate::rigs::process::signal_and_wait(child, signal).await;
}

fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn is_checkpoint(line: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(line).unwrap()["kind"] == "checkpoint"
}

/// The checkpoints of `lines` as the OTLP export ships them (each log record's body is the line as written), in
/// a file of their own.
fn shipped(dir: &Path, lines: &[String]) -> PathBuf {
    let checkpoints: Vec<String> = lines.iter().filter(|l| is_checkpoint(l)).cloned().collect();
    assert!(checkpoints.len() >= 2, "{lines:?}");
    copy(dir, "shipped.jsonl", &checkpoints)
}

#[tokio::test(flavor = "multi_thread")]
async fn lines_removed_from_the_end_that_a_shipped_checkpoint_covers_are_tampering() {
    let (dir, port, config) = signed_config(INTERVAL);
    run_across_a_checkpoint(&config, port, Signal::SIGTERM).await;
    let p = dir.path();
    let log = p.join("audit.jsonl");
    let lines = lines_of(&log);
    let shipped = shipped(p, &lines);
    let config = config.to_str().unwrap();
    let anchored = ["--config", config, "--anchor", shipped.to_str().unwrap()];
    let (code, out) = verify(&anchored, &[&log]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("anchor(s) found"), "{out}");

    let n = lines.len();
    let last_periodic = lines[..n - 1].iter().rposition(|l| is_checkpoint(l)).unwrap();
    assert!(
        last_periodic < n - 4,
        "records after the periodic checkpoint: {lines:?}"
    );
    for (name, keep) in [
        ("last-line", n - 1),
        ("several", n - 3),
        ("to-checkpoint", last_periodic + 1),
    ] {
        let cut = copy(p, name, &lines[..keep]);
        // The files alone: what a crash there would leave, and said so.
        let (code, out) = verify(&["--config", config], &[&cut]);
        assert_eq!(code, 3, "{name}: {out}");
        assert!(out.contains("cannot tell which"), "{name}: {out}");
        // With the checkpoints shipped off the machine: the lines they cover are missing.
        let (code, out) = verify(&anchored, &[&cut]);
        assert_eq!(code, 1, "{name}: {out}");
        assert!(
            out.contains(&format!("{name}:{keep}: deleted: the files end at seq {}", keep - 1)),
            "{name}: {out}"
        );
    }
    // Cut in the middle of a line (the final checkpoint's).
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.truncate(bytes.len() - 20);
    std::fs::write(p.join("mid-line"), bytes).unwrap();
    let (code, out) = verify(&anchored, &[&p.join("mid-line")]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("a line cut short") && out.contains("deleted"), "{out}");

    // Cut, and cordon started again on what was left: the chain goes on whole from there, so only a note says
    // the run before did not end sealed; the shipped final checkpoint shows its seq now holds another line.
    std::fs::write(
        &log,
        lines[..n - 3].iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    run_once(Path::new(config), port, 1, Signal::SIGTERM).await;
    let (code, out) = verify(&["--config", config], &[&log]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("did not end with its final checkpoint"), "{out}");
    let (code, out) = verify(&anchored, &[&log]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("not the checkpoint shipped as"), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_after_a_checkpoint_is_still_unsealed_and_before_the_first_one_has_no_signed_evidence() {
    let (dir, port, config) = signed_config(INTERVAL);
    run_across_a_checkpoint(&config, port, Signal::SIGKILL).await;
    let log = dir.path().join("audit.jsonl");
    let lines = lines_of(&log);
    assert!(!is_checkpoint(lines.last().unwrap()), "{lines:?}");
    let shipped = copy(
        dir.path(),
        "shipped.jsonl",
        &lines.iter().filter(|l| is_checkpoint(l)).cloned().collect::<Vec<_>>(),
    );
    let config = config.to_str().unwrap();
    let (code, out) = verify(&["--config", config], &[&log]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("not sealed"), "{out}");
    let (code, out) = verify(&["--config", config, "--anchor", shipped.to_str().unwrap()], &[&log]);
    assert_eq!(code, 3, "every checkpoint it shipped is in the file: {out}");

    // Killed before its first checkpoint: genuine, but nothing in it is signed.
    let (dir, port, config) = signed_config("1h");
    let child = spawn_cordon(&config, port, &[]).await;
    requests(port, "early", 2);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    crate::rigs::process::signal_and_wait(child, Signal::SIGKILL).await;
    let (code, out) = verify(
        &["--config", config.to_str().unwrap()],
        &[&dir.path().join("audit.jsonl")],
    );
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("no signed evidence"), "{out}");
}

/// A chain anyone can compute: `bodies` with `seq` and `prev` added, each linked to the one before.
fn forge(bodies: &[serde_json::Value]) -> Vec<String> {
    let mut prev = "0".repeat(64);
    let mut lines = Vec::new();
    for (seq, body) in bodies.iter().enumerate() {
        let mut m = body.as_object().unwrap().clone();
        m.insert("seq".into(), seq.into());
        m.insert("prev".into(), prev.clone().into());
        let line = serde_json::to_string(&m).unwrap();
        prev = hex::encode(sha2::Sha256::digest(line.as_bytes()));
        lines.push(line);
    }
    lines
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chain_forged_from_nothing_is_no_signed_evidence() {
    let (dir, _, config) = signed_config("300ms");
    // The key cordon would make on its first start; it never runs here.
    std::fs::write(dir.path().join("audit-key"), "a secret the forger does not have\n").unwrap();
    let config = config.to_str().unwrap();
    let start = serde_json::json!({"kind": "audit_start", "time": "2026-01-01T00:00:00.000Z", "continues": false,
        "version": "0.1.0", "signing": true});
    let record = serde_json::json!({"time": "2026-01-01T00:00:01.000Z", "kind": "http", "host": "innocent.test",
        "decision": "allow", "status": 200});
    let forged = copy(
        dir.path(),
        "forged",
        &forge(&[start.clone(), record.clone(), record.clone()]),
    );
    let (code, out) = verify(&["--config", config], &[&forged]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("no signed evidence"), "{out}");
    // The chain alone holds, and says only that: no verdict on who wrote it.
    assert_eq!(verify(&["--no-signatures"], &[&forged]).0, 3);

    // With an unsigned "final" checkpoint from a run that claims not to sign: still nothing signed.
    let mut unsigned = start.clone();
    unsigned["signing"] = false.into();
    let seal = serde_json::json!({"kind": "checkpoint", "time": "2026-01-01T00:00:02.000Z", "records": 3,
        "final": true, "rotated": false, "key": null});
    let sealed = copy(
        dir.path(),
        "sealed",
        &forge(&[unsigned, record.clone(), record.clone(), seal.clone()]),
    );
    let (code, out) = verify(&["--config", config], &[&sealed]);
    assert_eq!(code, 4, "{out}");
    // The same checkpoint in a run that says it signs is what cordon never writes.
    let claimed = copy(dir.path(), "claimed", &forge(&[start, record.clone(), seal]));
    let (code, out) = verify(&["--config", config], &[&claimed]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("an unsigned checkpoint where a signed one is expected"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_current_file_deleted_or_emptied_after_rotations_is_tampering() {
    let (dir, port, config) = signed_config("10s");
    let p = dir.path();
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("{text}  rotate: {{ size: 2KiB }}\n  compress: false\n"),
    )
    .unwrap();
    run_once(&config, port, 12, Signal::SIGTERM).await;
    let current = p.join("audit.jsonl");
    let mut rotated: Vec<PathBuf> = std::fs::read_dir(p)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|f| f.file_name().unwrap().to_str().unwrap().starts_with("audit.jsonl."))
        .collect();
    rotated.sort();
    assert!(rotated.len() >= 2, "{rotated:?}");
    let config = config.to_str().unwrap();
    let mut all: Vec<&Path> = rotated.iter().map(PathBuf::as_path).collect();
    all.push(&current);
    let (code, out) = verify(&["--config", config], &all);
    assert_eq!(code, 0, "{out}");

    let last = rotated.last().unwrap();
    let n = lines_of(last).len();
    std::fs::write(&current, "").unwrap();
    let (code, out) = verify(&["--config", config], &all);
    assert_eq!(code, 1, "emptied: {out}");
    assert!(out.contains(&format!("{}:{n}: deleted", last.display())), "{out}");
    std::fs::remove_file(&current).unwrap();
    all.pop();
    let (code, out) = verify(&["--config", config], &all);
    assert_eq!(code, 1, "deleted: {out}");
    assert!(out.contains("was deleted or emptied"), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_log_that_had_unsigned_runs_verifies_once_signing_is_turned_on_and_says_where_it_started() {
    let (dir, port, signed) = signed_config("300ms");
    // The same log first written without a key.
    let unsigned = dir.path().join("unsigned.yaml");
    let text = std::fs::read_to_string(&signed).unwrap();
    let without: String = text
        .lines()
        .filter(|l| !l.contains("signing_key"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&unsigned, without).unwrap();
    run_once(&unsigned, port, 2, Signal::SIGTERM).await;
    run_once(&signed, port, 2, Signal::SIGTERM).await;
    let log = dir.path().join("audit.jsonl");
    let lines = lines_of(&log);
    let starts: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.contains("\"kind\":\"audit_start\""))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(starts.len(), 2, "{lines:?}");
    let (code, out) = verify(&["--config", signed.to_str().unwrap()], &[&log]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!(
            "unsigned before signing started at {}:{}",
            log.display(),
            starts[1] + 1
        )),
        "{out}"
    );
    assert!(lines[starts[0]].contains("\"signing\":false"), "{lines:?}");
    assert!(
        lines[starts[1]].contains("\"signing\":true"),
        "the start of signing is marked: {lines:?}"
    );
    assert!(
        lines[..starts[1]].iter().any(|l| l.contains("\"key\":null")),
        "{lines:?}"
    );
    crate::rigs::audit::assert_schema(&log);
}
