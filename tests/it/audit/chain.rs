//! The audit log as evidence, through the binary: three runs of cordon (a clean stop, a SIGKILL, a clean stop)
//! append one chain to one file; `cordon audit verify` finds it intact with every checkpoint signed, and on copies
//! pinpoints each kind of tampering: an edit, a deletion, an insertion, a reordering, a truncation.

use std::process::Command;

use crate::rigs::audit::{assert_schema, copy, run_once, signed_config, verify};
use crate::rigs::process::BIN;
use crate::rigs::process::Signal;
use crate::rigs::wait::Within;

#[tokio::test(flavor = "multi_thread")]
async fn verify_passes_an_untouched_log_and_pinpoints_each_kind_of_tampering() {
    let (dir, port, config) = signed_config("300ms");
    run_once(&config, port, 5, Signal::SIGTERM).await;
    run_once(&config, port, 4, Signal::SIGKILL).await;
    run_once(&config, port, 3, Signal::SIGTERM).await;
    let log = dir.path().join("audit.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let starts: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("\"kind\":\"audit_start\""))
        .collect();
    assert_eq!(starts.len(), 3, "{text}");
    assert!(
        starts[1].contains("\"continues\":true"),
        "a restart continues the chain: {text}"
    );
    assert_eq!(
        lines.iter().filter(|l| l.contains("\"status\":407")).count(),
        12,
        "{text}"
    );

    assert_schema(&log);
    let config = config.to_str().unwrap();
    let (code, out) = verify(&["--config", config], &[&log]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("intact"), "{out}");
    // The key as `cordon audit public-key` prints it does the same.
    let key = Command::new(BIN)
        .args(["audit", "public-key", "--config", config])
        .timed_output()
        .unwrap();
    let key = String::from_utf8_lossy(&key.stdout).trim().to_string();
    assert_eq!(key.len(), 64);
    assert_eq!(verify(&["--public-key", &key], &[&log]).0, 0);
    // Another key: no checkpoint holds.
    let (code, out) = verify(&["--public-key", &"ab".repeat(32)], &[&log]);
    assert_eq!(code, 1, "{out}");
    // No key at all: refused unless the chain alone is asked for.
    assert_eq!(verify(&[], &[&log]).0, 2);
    assert_eq!(verify(&["--no-signatures"], &[&log]).0, 0);

    // The 3rd request record of the first run, and its line number.
    let k = lines.iter().position(|l| l.contains("host-2.test")).unwrap();
    let n = k + 1;
    let p = dir.path();
    let edited: Vec<String> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            if i == k {
                l.replace("host-2.test", "innocent.test")
            } else {
                l.clone()
            }
        })
        .collect();
    let (code, out) = verify(&["--config", config], &[&copy(p, "edit", &edited)]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(&format!("edit:{n}: edited")), "{out}");

    let mut deleted = lines.clone();
    deleted.remove(k);
    let (code, out) = verify(&["--config", config], &[&copy(p, "delete", &deleted)]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(&format!("delete:{}: deleted", n - 1)), "{out}");

    let mut inserted = lines.clone();
    inserted.insert(k + 1, lines[k].replace("host-2.test", "forged.test"));
    let (code, out) = verify(&["--config", config], &[&copy(p, "insert", &inserted)]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(&format!("insert:{}: inserted", n + 1)), "{out}");

    let mut reordered = lines.clone();
    reordered.swap(k, k + 1);
    let (code, out) = verify(&["--config", config], &[&copy(p, "reorder", &reordered)]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(&format!("reorder:{}: reordered", n + 1)), "{out}");

    // Cut after the last request records: nothing changed before, but the end is not sealed.
    let cut = &lines[..lines.len() - 1];
    let (code, out) = verify(&["--config", config], &[&copy(p, "truncate", cut)]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("not covered by a signature"), "{out}");
    // Cut in the middle of a line.
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.truncate(bytes.len() - 20);
    std::fs::write(p.join("cut"), bytes).unwrap();
    let (code, out) = verify(&["--config", config], &[&p.join("cut")]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("a line cut short"), "{out}");
    // An unreadable file is bad input.
    assert_eq!(verify(&["--config", config], &[&p.join("missing")]).0, 2);
}

/// A checkpoint falls due before cordon has read its signing key (read once the secret sources are up, after the
/// audit thread has started): it must not be written unsigned, which `verify` would rightly call forged. With
/// checkpoints due every millisecond, the first falls due before the key is read on every start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_due_before_the_key_is_read_is_not_written_unsigned() {
    let (dir, port, config) = signed_config("1ms");
    run_once(&config, port, 2, Signal::SIGTERM).await;
    run_once(&config, port, 2, Signal::SIGTERM).await;
    let log = dir.path().join("audit.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let checkpoints: Vec<&str> = text.lines().filter(|l| l.contains("\"kind\":\"checkpoint\"")).collect();
    assert!(!checkpoints.is_empty(), "{text}");
    assert!(checkpoints.iter().all(|l| l.contains("\"sig\":")), "{text}");
    let (code, out) = verify(&["--config", config.to_str().unwrap()], &[&log]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("intact"), "{out}");
}
