#![expect(clippy::unwrap_used, reason = "tests")]

use crate::audit::chain::{Chain, CheckpointSigner, Seal, tail_of};
use crate::audit::verify::{Report, Verification, anchors, verify};

const SECRET: &str = "the audit secret";

fn public() -> Vec<u8> {
    hex::decode(CheckpointSigner::from_secret(SECRET).unwrap().public_hex()).unwrap()
}

/// A log written run by run, as the writer does: a start line, records, checkpoints.
struct Log {
    chain: Chain,
    lines: Vec<Vec<u8>>,
}

impl Log {
    /// A new log whose first run signs (or not).
    fn new(signed: bool) -> Log {
        let mut log = Log {
            chain: Chain::after(None),
            lines: Vec::new(),
        };
        log.start(signed, false);
        log
    }

    /// A run (or a new file) continuing the chain as the file holds it now.
    fn start(&mut self, signed: bool, continued: bool) {
        self.chain = Chain::after(tail_of(&self.lines.concat()));
        if signed {
            self.chain.sign_with(CheckpointSigner::from_secret(SECRET).unwrap());
        }
        let line = self.chain.start_line("t", continued);
        self.lines.push(line);
    }

    /// A run started by a cordon that did not say whether it signs.
    fn legacy_start(&mut self, signed: bool) {
        self.chain = Chain::after(tail_of(&self.lines.concat()));
        if signed {
            self.chain.sign_with(CheckpointSigner::from_secret(SECRET).unwrap());
        }
        let mut line = b"{\"kind\":\"audit_start\",\"time\":\"t\",\"continues\":true,\"version\":\"0.1.0\"}\n".to_vec();
        self.chain.link(&mut line);
        self.lines.push(line);
    }

    fn records(&mut self, n: usize) {
        for i in 0..n {
            let mut line = format!("{{\"kind\":\"http\",\"host\":\"h{i}.test\"}}\n").into_bytes();
            self.chain.link(&mut line);
            self.lines.push(line);
        }
    }

    fn checkpoint(&mut self, why: Seal) {
        let line = self.chain.checkpoint_line("t", why).unwrap();
        self.lines.push(line);
    }
}

fn check(files: &[&[Vec<u8>]]) -> Report {
    check_anchored(files, &[])
}

fn check_anchored(files: &[&[Vec<u8>]], shipped: &[Vec<u8>]) -> Report {
    let files: Vec<(String, Vec<u8>)> = files
        .iter()
        .enumerate()
        .map(|(i, lines)| (format!("f{i}"), lines.concat()))
        .collect();
    let anchors = if shipped.is_empty() {
        Vec::new()
    } else {
        anchors("shipped", &shipped.concat(), &public()).unwrap()
    };
    verify(&files, Some(&public()), &anchors)
}

/// The checkpoints among `lines`, as a collector received them.
fn checkpoints(lines: &[Vec<u8>]) -> Vec<Vec<u8>> {
    lines
        .iter()
        .filter(|l| serde_json::from_slice::<serde_json::Value>(l).unwrap()["kind"] == "checkpoint")
        .cloned()
        .collect()
}

fn has(list: &[String], text: &str) -> bool {
    list.iter().any(|l| l.contains(text))
}

/// A signed log: start, 3 records, a checkpoint, 3 records, the final checkpoint (9 lines, seq 0 to 8).
fn sealed() -> Vec<Vec<u8>> {
    let mut log = Log::new(true);
    log.records(3);
    log.checkpoint(Seal::Due);
    log.records(3);
    log.checkpoint(Seal::Final);
    log.lines
}

#[test]
fn a_log_signed_from_a_later_run_on_verifies_and_says_where_signing_started() {
    let mut log = Log::new(false);
    log.records(2);
    log.checkpoint(Seal::Due);
    log.records(1);
    log.checkpoint(Seal::Final);
    // Signing turned on: the 7th line starts the first run that signs.
    log.start(true, true);
    log.records(2);
    log.checkpoint(Seal::Final);
    let r = check(&[&log.lines]);
    assert_eq!(r.outcome(), Verification::Intact, "{r:?}");
    assert_eq!(r.signed, 1);
    assert!(
        has(&r.notes, "unsigned before signing started at f0:7")
            && has(&r.notes, "from f0:1 to f0:6")
            && has(&r.notes, "2 unsigned checkpoint(s)"),
        "{r:?}"
    );
    // An unsigned checkpoint after that point is what a forger would write.
    log.start(false, true);
    log.records(1);
    log.checkpoint(Seal::Final);
    let r = check(&[&log.lines]);
    assert_eq!(r.outcome(), Verification::Tampered, "{r:?}");
    assert!(
        has(
            &r.tampering,
            "f0:13: an unsigned checkpoint where a signed one is expected"
        ),
        "{r:?}"
    );
}

#[test]
fn a_log_of_an_older_cordon_signed_from_a_later_run_on_verifies_too() {
    // Without the `signing` mark: signing started with the run of the first signed checkpoint.
    let mut log = Log::new(false);
    log.lines.clear();
    log.legacy_start(false);
    log.records(2);
    log.checkpoint(Seal::Final);
    log.legacy_start(true);
    log.records(2);
    log.checkpoint(Seal::Due);
    log.checkpoint(Seal::Final);
    let r = check(&[&log.lines]);
    assert_eq!((r.outcome(), r.signed), (Verification::Intact, 2), "{r:?}");
    assert!(has(&r.notes, "unsigned before signing started at f0:5"), "{r:?}");
}

#[test]
fn an_unsigned_checkpoint_in_a_run_that_signs_is_tampering() {
    // A start that says the run signs, then a checkpoint without a signature (no signed one before it).
    let mut log = Log::new(false);
    log.chain = Chain::after(None).awaiting_key(true);
    log.lines.clear();
    log.lines.push(log.chain.start_line("t", false));
    log.records(1);
    log.chain = Chain::after(tail_of(&log.lines.concat()));
    log.checkpoint(Seal::Final);
    let r = check(&[&log.lines]);
    assert_eq!(r.outcome(), Verification::Tampered, "{r:?}");
    assert!(has(&r.tampering, "signing started at f0:1"), "{r:?}");
}

#[test]
fn a_chain_forged_from_nothing_is_no_signed_evidence() {
    // Valid hashes, no checkpoint: nothing shows who wrote it.
    let mut log = Log::new(false);
    log.records(3);
    let r = check(&[&log.lines]);
    assert_eq!(r.outcome(), Verification::NoSignedEvidence, "{r:?}");
    assert!(has(&r.notes, "no signed evidence"), "{r:?}");
    // With unsigned checkpoints, even "sealed": the same.
    log.checkpoint(Seal::Final);
    let r = check(&[&log.lines]);
    assert_eq!(r.outcome(), Verification::NoSignedEvidence, "{r:?}");
    // And a run that says it signs but has no checkpoint yet (killed before its first one).
    let mut log = Log::new(true);
    log.records(2);
    assert_eq!(check(&[&log.lines]).outcome(), Verification::NoSignedEvidence);
    // Nothing at all.
    assert_eq!(check(&[&[]]).outcome(), Verification::NoSignedEvidence);
    // Without a key the chain alone is judged: no verdict on signatures.
    let r = verify(&[("f0".into(), log.lines.concat())], None, &[]);
    assert_eq!(r.outcome(), Verification::Unsealed, "{r:?}");
}

#[test]
fn a_file_missing_after_a_rotation_is_tampering() {
    let mut log = Log::new(true);
    log.records(3);
    log.checkpoint(Seal::Turn);
    let rotated = log.lines.len();
    log.start(true, true);
    log.records(2);
    log.checkpoint(Seal::Final);
    let (old, current) = log.lines.split_at(rotated);
    assert_eq!(check(&[old, current]).outcome(), Verification::Intact);
    // The current file deleted, or emptied.
    for files in [vec![old], vec![old, &[]]] {
        let r = check(&files);
        assert_eq!(r.outcome(), Verification::Tampered, "{r:?}");
        assert!(
            has(&r.tampering, "f0:5: deleted") && has(&r.tampering, "from seq 5"),
            "{r:?}"
        );
    }
    // The current file alone: its start continues a chain whose beginning is not given, which is no tampering.
    let r = check(&[current]);
    assert_eq!(r.outcome(), Verification::Intact, "{r:?}");
    assert!(has(&r.notes, "the first line is seq 5"), "{r:?}");
}

#[test]
fn lines_cut_from_the_beginning_show() {
    let lines = sealed();
    // Inside the first checkpoint's lines: its count shows what is missing.
    let r = check(&[&lines[2..]]);
    assert_eq!(r.outcome(), Verification::Tampered, "{r:?}");
    assert!(
        has(&r.tampering, "f0:1: the first line given is not an audit_start")
            && has(&r.tampering, "seq 0 to 1 are missing"),
        "{r:?}"
    );
    // Up to a checkpoint: no count reaches back, but the file no longer begins as cordon's files do.
    let r = check(&[&lines[5..]]);
    assert_eq!(r.outcome(), Verification::Tampered, "{r:?}");
    assert!(has(&r.tampering, "not an audit_start"), "{r:?}");
}

#[test]
fn lines_a_shipped_checkpoint_covers_are_missing_when_cut_from_the_end() {
    let lines = sealed();
    let shipped = checkpoints(&lines);
    let r = check_anchored(&[&lines], &shipped);
    assert_eq!((r.outcome(), r.anchored), (Verification::Intact, 2), "{r:?}");
    // The last line only (the final checkpoint), several lines, back to the checkpoint before: without anchors
    // as a crash would leave them, with them tampering.
    for keep in [8, 6, 5] {
        let cut = &lines[..keep];
        assert_eq!(check(&[cut]).outcome(), Verification::Unsealed, "{keep}");
        let r = check_anchored(&[cut], &shipped);
        assert_eq!(r.outcome(), Verification::Tampered, "{keep}: {r:?}");
        assert!(
            has(
                &r.tampering,
                &format!("f0:{keep}: deleted: the files end at seq {}", keep - 1)
            ) && has(&r.tampering, "shipped:2 covers every line up to seq 8"),
            "{keep}: {r:?}"
        );
    }
    // In the middle of a line.
    let mut cut = lines.concat();
    cut.truncate(cut.len() - 30);
    let files = [("f0".to_string(), cut)];
    let anchors = anchors("shipped", &shipped.concat(), &public()).unwrap();
    assert_eq!(
        verify(&files, Some(&public()), &anchors).outcome(),
        Verification::Tampered
    );
    // Everything gone.
    let r = check_anchored(&[&[]], &shipped);
    assert_eq!(r.outcome(), Verification::Tampered, "{r:?}");
}

#[test]
fn a_crash_stays_unsealed_with_the_checkpoints_it_shipped() {
    let mut log = Log::new(true);
    log.records(3);
    log.checkpoint(Seal::Due);
    log.records(2);
    let r = check_anchored(&[&log.lines], &checkpoints(&log.lines));
    assert_eq!((r.outcome(), r.anchored), (Verification::Unsealed, 1), "{r:?}");
    assert!(has(&r.notes, "2 line(s) after the last checkpoint (f0:5)"), "{r:?}");
    // Started again after it: sealed, and the restart is noted.
    log.start(true, true);
    log.records(1);
    log.checkpoint(Seal::Final);
    let r = check_anchored(&[&log.lines], &checkpoints(&log.lines[..5]));
    assert_eq!(r.outcome(), Verification::Intact, "{r:?}");
    assert!(
        has(
            &r.notes,
            "f0:8: this run continues a chain whose run before did not end"
        ),
        "{r:?}"
    );
}

#[test]
fn a_chain_rewritten_under_a_shipped_checkpoint_is_tampering() {
    // The last lines cut, and cordon started again on the rest: the chain is whole, but the shipped final
    // checkpoint's seq now holds another line.
    let lines = sealed();
    let shipped = checkpoints(&lines);
    let mut log = Log {
        chain: Chain::after(None),
        lines: lines[..7].to_vec(),
    };
    log.start(true, true);
    log.records(3);
    log.checkpoint(Seal::Final);
    assert_eq!(check(&[&log.lines]).outcome(), Verification::Intact);
    let r = check_anchored(&[&log.lines], &shipped);
    assert_eq!(r.outcome(), Verification::Tampered, "{r:?}");
    assert!(
        has(&r.tampering, "not the checkpoint shipped as shipped:2 (seq 8)"),
        "{r:?}"
    );
}

#[test]
fn an_anchor_must_be_a_checkpoint_signed_by_the_key() {
    let lines = sealed();
    let e = anchors("a", &lines.concat(), &[7u8; 32]).unwrap_err();
    assert!(e.contains("a:5: a checkpoint not signed by this key"), "{e}");
    let e = anchors("a", &lines[..4].concat(), &public()).unwrap_err();
    assert!(e.contains("no signed checkpoint"), "{e}");
    // Records among them are skipped: a whole copy of what was shipped anchors as its checkpoints.
    assert_eq!(anchors("a", &lines.concat(), &public()).unwrap().len(), 2);
}
