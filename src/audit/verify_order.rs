//! The chain's order, for `verify`: duplicates, gaps, order and links, judged by `seq`.

use std::collections::HashMap;

use super::{AuditLine, Report};
use crate::audit::chain::GENESIS;

/// Duplicates, gaps, order and links, judged by `seq`.
pub(super) fn check_order(entries: &[AuditLine], report: &mut Report) {
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
