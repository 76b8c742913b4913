//! `cordon audit verify`: check the hash chain and the signed checkpoints of audit files, and say precisely what
//! was edited, deleted, inserted or reordered, and whether the end is sealed by cordon's final checkpoint.

use std::collections::HashMap;

use ring::signature::{ED25519, UnparsedPublicKey};

use super::chain::GENESIS;

/// How the files stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Every line is where the chain puts it, every checkpoint signature checked holds, and the last line is
    /// cordon's final checkpoint.
    Intact,
    /// Nothing was found changed, but the last lines are not sealed: the log was truncated after its last
    /// checkpoint, cordon did not stop cleanly, or it is still writing.
    Unsealed,
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
    /// Whether the last line is a final checkpoint.
    pub(crate) sealed: bool,
}

impl Report {
    /// The verdict.
    pub(crate) fn outcome(&self) -> Outcome {
        if !self.tampering.is_empty() {
            Outcome::Tampered
        } else if self.sealed {
            Outcome::Intact
        } else {
            Outcome::Unsealed
        }
    }
}

/// One line of a file.
struct Entry {
    at: String,
    seq: u64,
    prev: [u8; 32],
    hash: [u8; 32],
    checkpoint: Option<Checkpoint>,
}

struct Checkpoint {
    last: bool,
    /// The signed body and the signature, if it carries one.
    signed: Option<(Vec<u8>, Vec<u8>)>,
}

/// Check `files` (name, contents), which hold one chain, oldest first; `key` is the trusted public key (none:
/// signatures are not checked, and the report says so).
pub(crate) fn verify(files: &[(String, Vec<u8>)], key: Option<&[u8]>) -> Report {
    let mut report = Report::default();
    let mut entries = Vec::new();
    for (name, text) in files {
        read_lines(name, text, &mut entries, &mut report);
    }
    report.lines = entries.len();
    check_order(&entries, &mut report);
    check_signatures(&entries, key, &mut report);
    report.sealed = entries
        .last()
        .is_some_and(|e| e.checkpoint.as_ref().is_some_and(|c| c.last));
    if let Some(last_checkpoint) = entries.iter().rposition(|e| e.checkpoint.is_some()) {
        let after = entries.len() - 1 - last_checkpoint;
        if !report.sealed {
            report.notes.push(format!(
                "{after} line(s) after the last checkpoint ({}) are not covered by a signature, and the log does not \
                 end with cordon's final checkpoint: it was truncated after that checkpoint, or cordon did not stop \
                 cleanly (e.g. SIGKILL), or it is still writing",
                entries[last_checkpoint].at
            ));
        }
    } else if !entries.is_empty() {
        report
            .notes
            .push("no checkpoint at all: nothing is covered by a signature".into());
    }
    report
}

fn read_lines(name: &str, text: &[u8], entries: &mut Vec<Entry>, report: &mut Report) {
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

fn entry(line: &[u8], at: String) -> Result<Entry, String> {
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
    let checkpoint =
        (value.get("kind").and_then(serde_json::Value::as_str) == Some("checkpoint")).then(|| Checkpoint {
            last: value.get("final").and_then(serde_json::Value::as_bool) == Some(true),
            signed: signed_body(line, &value),
        });
    Ok(Entry {
        at,
        seq,
        prev,
        hash: super::chain::sha256(line),
        checkpoint,
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

/// Duplicates, gaps, order and links, judged by `seq`.
fn check_order(entries: &[Entry], report: &mut Report) {
    let mut by_seq: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        by_seq.entry(e.seq).or_default().push(i);
    }
    // Of several lines claiming one seq, the one the chain links in on either side is the genuine one.
    let genuine = |seq: u64| -> Option<usize> {
        let claims = by_seq.get(&seq)?;
        if claims.len() == 1 {
            return Some(claims[0]);
        }
        let before: Vec<[u8; 32]> = seq
            .checked_sub(1)
            .and_then(|s| by_seq.get(&s))
            .map(|v| v.iter().map(|i| entries[*i].hash).collect())
            .unwrap_or_default();
        let after: Vec<[u8; 32]> = by_seq
            .get(&(seq + 1))
            .map(|v| v.iter().map(|i| entries[*i].prev).collect())
            .unwrap_or_default();
        claims
            .iter()
            .copied()
            .find(|i| after.contains(&entries[*i].hash) || before.contains(&entries[*i].prev))
    };
    let mut kept = vec![false; entries.len()];
    let mut seqs: Vec<u64> = by_seq.keys().copied().collect();
    seqs.sort_unstable();
    for &seq in &seqs {
        let g = genuine(seq);
        for &i in &by_seq[&seq] {
            if Some(i) == g {
                kept[i] = true;
            } else {
                report.tampering.push(format!(
                    "{}: inserted: another line holds seq {seq} and is the one the chain links in",
                    entries[i].at
                ));
            }
        }
        if g.is_none() {
            let at: Vec<&str> = by_seq[&seq].iter().map(|i| entries[*i].at.as_str()).collect();
            report.tampering.push(format!(
                "{}: several lines claim seq {seq} and none is linked in: inserted or edited",
                at.join(", ")
            ));
        }
    }
    // Gaps: records deleted.
    for pair in seqs.windows(2) {
        if pair[1] > pair[0] + 1 {
            let (a, b) = (pair[0] + 1, pair[1] - 1);
            let after = by_seq[&pair[0]]
                .iter()
                .map(|i| entries[*i].at.as_str())
                .next()
                .unwrap_or("");
            let what = if a == b {
                format!("seq {a} is")
            } else {
                format!("seq {a} to {b} are")
            };
            report.tampering.push(format!(
                "{after}: deleted: the record(s) {what} missing after this line"
            ));
        }
    }
    if let Some(first) = seqs.first()
        && *first > 0
    {
        report.notes.push(format!(
            "the first line is seq {first}: the lines before it are in files not given (or removed by retention)"
        ));
    }
    // Order, among the genuine lines, as the files hold them.
    let genuine_lines = || entries.iter().zip(&kept).filter(|(_, k)| **k).map(|(e, _)| e);
    let mut highest: Option<(u64, &str)> = None;
    for e in genuine_lines() {
        match highest {
            Some((h, at)) if e.seq < h => {
                report
                    .tampering
                    .push(format!("{}: reordered: seq {} comes after seq {h} ({at})", e.at, e.seq));
            }
            _ => highest = Some((e.seq, e.at.as_str())),
        }
    }
    // Links: each line names the hash of the one before it.
    for e in genuine_lines() {
        match e.seq.checked_sub(1).and_then(genuine) {
            Some(p) if entries[p].hash != e.prev => report.tampering.push(format!(
                "{}: edited: its content is not what seq {} ({}) links to",
                entries[p].at, e.seq, e.at
            )),
            None if e.seq == 0 && e.prev != GENESIS => {
                report
                    .tampering
                    .push(format!("{}: edited: seq 0 must start from nothing", e.at));
            }
            _ => {}
        }
    }
}

fn check_signatures(entries: &[Entry], key: Option<&[u8]>, report: &mut Report) {
    let Some(key) = key else {
        report
            .notes
            .push("checkpoint signatures were not checked: give --public-key or --config".into());
        return;
    };
    let key = UnparsedPublicKey::new(&ED25519, key);
    for e in entries {
        let Some(c) = &e.checkpoint else { continue };
        match &c.signed {
            Some((body, sig)) if key.verify(body, sig).is_ok() => report.signed += 1,
            Some(_) => report.tampering.push(format!(
                "{}: a checkpoint whose signature does not hold for this key: edited, or made with another key",
                e.at
            )),
            None => report.tampering.push(format!(
                "{}: an unsigned checkpoint where a signed one is expected",
                e.at
            )),
        }
    }
}

#[cfg(test)]
#[path = "verify_tests.rs"]
mod tests;
