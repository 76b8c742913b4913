#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;
use crate::audit::chain::{Chain, CheckpointSigner, Seal};

const SECRET: &str = "the audit secret";

/// A sealed log: a start line, records 1..=9 with a checkpoint after the 5th, and the final checkpoint.
fn log() -> Vec<Vec<u8>> {
    let mut chain = Chain::after(None);
    chain.sign_with(CheckpointSigner::from_secret(SECRET).unwrap());
    let mut lines = vec![chain.start_line("t0", false)];
    for i in 1..=9 {
        let mut line = format!("{{\"time\":\"t{i}\",\"kind\":\"http\",\"host\":\"h{i}.test\"}}\n").into_bytes();
        chain.link(&mut line);
        lines.push(line);
        if i == 5 {
            lines.push(chain.checkpoint_line("t5", Seal::Due).unwrap());
        }
    }
    lines.push(chain.checkpoint_line("t9", Seal::Final).unwrap());
    lines
}

fn public() -> Vec<u8> {
    hex::decode(CheckpointSigner::from_secret(SECRET).unwrap().public_hex()).unwrap()
}

fn check(lines: &[Vec<u8>]) -> Report {
    verify(&[("a.jsonl".to_string(), lines.concat())], Some(&public()), &[])
}

#[test]
fn an_untouched_log_is_intact_with_every_checkpoint_signed() {
    let r = check(&log());
    assert_eq!(r.outcome(), Verification::Intact, "{r:?}");
    assert_eq!((r.lines, r.signed), (12, 2));
    // Split across files at any line, oldest first: the same.
    let lines = log();
    let r = verify(
        &[("1".into(), lines[..4].concat()), ("2".into(), lines[4..].concat())],
        Some(&public()),
        &[],
    );
    assert_eq!(r.outcome(), Verification::Intact, "{r:?}");
}

#[test]
fn an_edit_is_pinpointed() {
    let mut lines = log();
    lines[3] = String::from_utf8(lines[3].clone())
        .unwrap()
        .replace("h3.test", "h4.test")
        .into_bytes();
    let r = check(&lines);
    assert_eq!(r.outcome(), Verification::Tampered);
    assert_eq!(r.tampering.len(), 1, "{r:?}");
    assert!(r.tampering[0].starts_with("a.jsonl:4: edited"), "{r:?}");
}

#[test]
fn a_deletion_is_pinpointed() {
    let mut lines = log();
    lines.remove(3);
    let r = check(&lines);
    assert_eq!(r.outcome(), Verification::Tampered);
    assert!(
        r.tampering
            .iter()
            .any(|t| t.starts_with("a.jsonl:3: deleted") && t.contains("seq 3 is")),
        "{r:?}"
    );
}

#[test]
fn an_insertion_is_pinpointed_even_with_a_plausible_seq() {
    let mut lines = log();
    // A forged copy of record 3 with another host, placed after it.
    let forged = String::from_utf8(lines[3].clone())
        .unwrap()
        .replace("h3.test", "evil.test");
    lines.insert(4, forged.into_bytes());
    let r = check(&lines);
    assert_eq!(r.outcome(), Verification::Tampered);
    assert_eq!(r.tampering.len(), 1, "{r:?}");
    assert!(r.tampering[0].starts_with("a.jsonl:5: inserted"), "{r:?}");
    // And a line without a place in the chain.
    let mut lines = log();
    lines.insert(2, b"{\"kind\":\"http\",\"host\":\"x\"}\n".to_vec());
    let r = check(&lines);
    assert!(
        r.tampering
            .iter()
            .any(|t| t.starts_with("a.jsonl:3: a record without its place")),
        "{r:?}"
    );
}

#[test]
fn a_reordering_is_pinpointed() {
    let mut lines = log();
    lines.swap(3, 4);
    let r = check(&lines);
    assert_eq!(r.outcome(), Verification::Tampered);
    assert!(
        r.tampering.iter().any(|t| t.starts_with("a.jsonl:5: reordered")),
        "{r:?}"
    );
}

#[test]
fn truncation_after_the_last_checkpoint_leaves_it_unsealed_and_before_it_shows() {
    let lines = log();
    // Cut after the 7th record: the records before the checkpoint are vouched for, the end is not sealed.
    let r = check(&lines[..9]);
    assert_eq!(r.outcome(), Verification::Unsealed, "{r:?}");
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("2 line(s) after the last checkpoint (a.jsonl:7)")),
        "{r:?}"
    );
    // Cut in the middle of a line.
    let mut cut = lines[..9].concat();
    cut.truncate(cut.len() - 10);
    let r = verify(&[("a.jsonl".into(), cut)], Some(&public()), &[]);
    assert!(
        r.notes.iter().any(|n| n.contains("a.jsonl:9: a line cut short")),
        "{r:?}"
    );
}

#[test]
fn a_rewritten_chain_fails_at_the_signed_checkpoint() {
    // Delete record 2 and rewrite every later link so the chain is consistent again: only the checkpoints,
    // whose signatures cover the links, can tell; their `prev` no longer matches, or their signature fails.
    let original = log();
    let mut chain = Chain::after(None);
    let mut forged = vec![chain.start_line("t0", false)];
    for (i, line) in original.iter().enumerate().skip(1) {
        if i == 2 {
            continue;
        }
        let v: serde_json::Value = serde_json::from_slice(line).unwrap();
        if v["kind"] == "checkpoint" {
            forged.push(line.clone());
            continue;
        }
        let mut m = v.as_object().unwrap().clone();
        m.remove("seq");
        m.remove("prev");
        let mut l = serde_json::to_vec(&m).unwrap();
        chain.link(&mut l);
        forged.push(l);
    }
    let r = check(&forged);
    assert_eq!(r.outcome(), Verification::Tampered, "{r:?}");
    // Signed with another key: refused too.
    let r = verify(&[("a.jsonl".into(), log().concat())], Some(&[7u8; 32]), &[]);
    assert_eq!(r.outcome(), Verification::Tampered);
}
