//! `cordon audit verify`: check the hash chain and the signed checkpoints of audit files, and say precisely what
//! was edited, deleted, inserted or reordered, whether the end is sealed by cordon's final checkpoint, and
//! whether anything in the files is signed at all.
//!
//! What the files alone can tell, and what they cannot: lines removed from the beginning of the oldest file, or
//! from anywhere before a line that remains, show; a file that ends with the checkpoint cordon writes before it
//! turns to a new file, with no file after it, shows that the next file is gone. An end that is not sealed
//! cannot: a crash and the removal of the last lines (with the final checkpoint) leave the same bytes. Signed
//! checkpoints kept off the machine (the OTLP export ships every line) close that gap: given as anchors, any
//! line they cover that is missing or different is tampering.

use ring::signature::{ED25519, UnparsedPublicKey};

#[path = "verify_evidence.rs"]
mod evidence;
#[path = "verify_order.rs"]
mod order;

/// How the files stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verification {
    /// Every line is where the chain puts it, every checkpoint signature checked holds, and the last line is
    /// cordon's final checkpoint.
    Intact,
    /// Nothing was found changed, but the last lines are not sealed: cordon did not stop cleanly, it is still
    /// writing, or the last lines were removed (the files alone cannot tell which).
    Unsealed,
    /// Signatures were checked and no checkpoint signed by the key is in the files: nothing shows that cordon
    /// wrote any of it (a chain anyone can compute, a log written without a key, or a run that stopped before
    /// its first checkpoint).
    NoSignedEvidence,
    /// Something was edited, deleted, inserted or reordered, or a signature does not hold.
    Tampered,
}

/// What `verify` found.
#[derive(Debug, Default)]
pub(crate) struct Report {
    /// Each problem, `FILE:LINE: what`, in the order of the files.
    pub(crate) tampering: Vec<String>,
    /// What is worth knowing but is not tampering.
    pub(crate) notes: Vec<String>,
    /// Chained lines read.
    pub(crate) lines: usize,
    /// Checkpoints whose signature was checked and holds.
    pub(crate) signed: usize,
    /// Anchors (signed checkpoints kept elsewhere) found in the files as they were shipped.
    pub(crate) anchored: usize,
    /// Whether the last line is a final checkpoint.
    pub(crate) sealed: bool,
    /// Whether signatures were checked (a key was given).
    pub(crate) key_checked: bool,
}

impl Report {
    /// The verdict.
    pub(crate) fn outcome(&self) -> Verification {
        if !self.tampering.is_empty() {
            Verification::Tampered
        } else if self.key_checked && self.signed == 0 {
            Verification::NoSignedEvidence
        } else if self.sealed {
            Verification::Intact
        } else {
            Verification::Unsealed
        }
    }
}

/// A signed checkpoint kept apart from the files (shipped off the machine): its place and its hash.
#[derive(Debug, Clone)]
pub(crate) struct Anchor {
    /// Where it was read, `FILE:LINE`.
    pub(crate) at: String,
    pub(crate) seq: u64,
    pub(crate) hash: [u8; 32],
}

/// One line of a file.
struct AuditLine {
    at: String,
    seq: u64,
    prev: [u8; 32],
    hash: [u8; 32],
    line: AuditLineKind,
}

/// What a line is, as far as `verify` cares.
enum AuditLineKind {
    Record,
    /// An `audit_start`, and whether its run said it signs (absent: written before cordon said so).
    Start {
        signing: Option<bool>,
    },
    Checkpoint(Checkpoint),
}

struct Checkpoint {
    last: bool,
    /// Written before cordon turned to a new file: the chain goes on in the next one.
    rotated: bool,
    /// How many lines before it it covers since the checkpoint before it (or since its run started).
    records: Option<u64>,
    /// The signed body and the signature, if it carries one.
    signed: Option<(Vec<u8>, Vec<u8>)>,
}

impl AuditLine {
    fn checkpoint(&self) -> Option<&Checkpoint> {
        match &self.line {
            AuditLineKind::Checkpoint(c) => Some(c),
            _ => None,
        }
    }
}

/// Check `files` (name, contents), which hold one chain, oldest first; `key` is the trusted public key (none:
/// signatures are not checked, and the report says so); `anchors` are signed checkpoints of this chain kept
/// elsewhere ([`anchors`]).
pub(crate) fn verify(files: &[(String, Vec<u8>)], key: Option<&[u8]>, anchors: &[Anchor]) -> Report {
    let mut report = Report {
        key_checked: key.is_some(),
        ..Report::default()
    };
    let mut entries = Vec::new();
    for (name, text) in files {
        read_lines(name, text, &mut entries, &mut report);
    }
    report.lines = entries.len();
    order::check_order(&entries, &mut report);
    evidence::check_beginning(&entries, &mut report);
    match key {
        Some(key) => evidence::check_signatures(&entries, key, &mut report),
        None => report
            .notes
            .push("checkpoint signatures were not checked: give --public-key or --config".into()),
    }
    evidence::check_restarts(&entries, &mut report);
    evidence::check_anchors(&entries, anchors, &mut report);
    evidence::check_end(&entries, &mut report);
    report
}

/// The signed checkpoints among the lines of `text` (read from `name`: a copy of the lines cordon shipped off the
/// machine, as a collector received them; other lines are skipped). Each must be signed by `key`: one that is
/// not is refused, since a forged anchor could only mislead.
pub(crate) fn anchors(name: &str, text: &[u8], key: &[u8]) -> Result<Vec<Anchor>, String> {
    let key = UnparsedPublicKey::new(&ED25519, key);
    let mut found = Vec::new();
    for (i, line) in text.split(|b| *b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let at = format!("{name}:{}", i + 1);
        let Ok(e) = entry(line, at.clone()) else { continue };
        let Some(c) = e.checkpoint() else { continue };
        match &c.signed {
            Some((body, sig)) if key.verify(body, sig).is_ok() => found.push(Anchor {
                at,
                seq: e.seq,
                hash: e.hash,
            }),
            _ => {
                return Err(format!(
                    "{at}: a checkpoint not signed by this key cannot anchor the log"
                ));
            }
        }
    }
    if found.is_empty() {
        return Err(format!("{name}: no signed checkpoint in it"));
    }
    Ok(found)
}

fn read_lines(name: &str, text: &[u8], entries: &mut Vec<AuditLine>, report: &mut Report) {
    let mut lines: Vec<&[u8]> = text.split(|b| *b == b'\n').collect();
    let unterminated = lines.pop().filter(|l| !l.is_empty());
    for (i, line) in lines.iter().enumerate() {
        let at = format!("{name}:{}", i + 1);
        match entry(line, at.clone()) {
            Ok(e) => entries.push(e),
            Err(why) => report.tampering.push(format!("{at}: {why}")),
        }
    }
    if unterminated.is_some() {
        report.notes.push(format!(
            "{name}:{}: a line cut short (no newline): a write interrupted by a crash, or the file was cut",
            lines.len() + 1
        ));
    }
}

fn entry(line: &[u8], at: String) -> Result<AuditLine, String> {
    if line.is_empty() {
        return Err("an empty line, which cordon never writes: inserted".into());
    }
    let value: serde_json::Value =
        serde_json::from_slice(line).map_err(|e| format!("not a JSON record ({e}): edited or inserted"))?;
    let seq = value.get("seq").and_then(serde_json::Value::as_u64);
    let prev = value
        .get("prev")
        .and_then(serde_json::Value::as_str)
        .and_then(|h| hex::decode(h).ok())
        .and_then(|b| <[u8; 32]>::try_from(b).ok());
    let (Some(seq), Some(prev)) = (seq, prev) else {
        return Err("a record without its place in the chain (`seq`, `prev`): inserted, or edited".into());
    };
    let flag = |name: &str| value.get(name).and_then(serde_json::Value::as_bool);
    let line_kind = match value.get("kind").and_then(serde_json::Value::as_str) {
        Some("checkpoint") => AuditLineKind::Checkpoint(Checkpoint {
            last: flag("final") == Some(true),
            rotated: flag("rotated") == Some(true),
            records: value.get("records").and_then(serde_json::Value::as_u64),
            signed: signed_body(line, &value),
        }),
        Some("audit_start") => AuditLineKind::Start {
            signing: flag("signing"),
        },
        _ => AuditLineKind::Record,
    };
    Ok(AuditLine {
        at,
        seq,
        prev,
        hash: super::chain::sha256(line),
        line: line_kind,
    })
}

/// A checkpoint's signed body (the line without its trailing `"sig"` member) and its signature.
fn signed_body(line: &[u8], value: &serde_json::Value) -> Option<(Vec<u8>, Vec<u8>)> {
    let sig = value.get("sig")?.as_str()?;
    let suffix = format!(",\"sig\":\"{sig}\"}}");
    let body = line.strip_suffix(suffix.as_bytes())?;
    let mut body = body.to_vec();
    body.push(b'}');
    Some((body, hex::decode(sig).ok()?))
}

#[cfg(test)]
#[path = "verify_tests.rs"]
mod tests;
