//! What the checkpoints prove, for `verify`: their signatures (and where signing started on a log that had
//! unsigned runs first), the beginning and the end of the files, restarts after an unsealed end, and the
//! signed checkpoints kept elsewhere (anchors).

use ring::signature::{ED25519, UnparsedPublicKey};

use super::{Anchor, AuditLine, AuditLineKind, Report};

/// The oldest file given must begin where a file of cordon's begins: with an `audit_start` line (retention
/// deletes whole files, so the oldest one left still does). Anything else means lines were cut from its
/// beginning; the first checkpoint's `records` says how many it covered.
pub(super) fn check_beginning(entries: &[AuditLine], report: &mut Report) {
    let Some(first) = entries.first() else { return };
    if matches!(first.line, AuditLineKind::Start { .. }) {
        return;
    }
    let mut why = format!(
        "{}: the first line given is not an audit_start, the line every file of cordon's begins with: lines were \
         removed from the beginning of this file",
        first.at
    );
    let covered = entries
        .iter()
        .find_map(|e| Some((e, e.checkpoint()?.records?)))
        .and_then(|(e, records)| Some((e, e.seq.checked_sub(records)?)));
    if let Some((c, from)) = covered
        && from < first.seq
    {
        why.push_str(&format!(
            " (the checkpoint at {} covers the lines from seq {from}; seq {from} to {} are missing)",
            c.at,
            first.seq - 1
        ));
    }
    report.tampering.push(why);
}

/// Every checkpoint must be signed by `key`, except those of the runs before signing started: the first
/// `audit_start` that says `signing: true`, or (in a log written before cordon said so) the first checkpoint
/// whose signature holds. The signed checkpoints after them vouch that those lines are unchanged, not who wrote
/// them, and the report says so.
pub(super) fn check_signatures(entries: &[AuditLine], key: &[u8], report: &mut Report) {
    let key = UnparsedPublicKey::new(&ED25519, key);
    let marker = entries
        .iter()
        .position(|e| matches!(e.line, AuditLineKind::Start { signing: Some(true) }));
    let mut first_signed = None;
    let mut unsigned = 0;
    let mut last_unsigned = None;
    for (i, e) in entries.iter().enumerate() {
        let Some(c) = e.checkpoint() else { continue };
        match &c.signed {
            Some((body, sig)) if key.verify(body, sig).is_ok() => {
                report.signed += 1;
                first_signed.get_or_insert(i);
            }
            Some(_) => report.tampering.push(format!(
                "{}: a checkpoint whose signature does not hold for this key: edited, or made with another key",
                e.at
            )),
            None => {
                let since = match (marker, first_signed) {
                    (_, Some(f)) => Some(f),
                    (Some(m), None) if i > m => Some(m),
                    _ => None,
                };
                match since {
                    Some(s) => report.tampering.push(format!(
                        "{}: an unsigned checkpoint where a signed one is expected (signing started at {})",
                        e.at, entries[s].at
                    )),
                    None => {
                        unsigned += 1;
                        last_unsigned = Some(i);
                    }
                }
            }
        }
    }
    let unsigned_runs = entries[..marker.unwrap_or(0)]
        .iter()
        .any(|e| matches!(e.line, AuditLineKind::Start { signing: Some(false) }));
    // Without the mark (a log of a cordon that did not write it), the run of the first signed checkpoint.
    let legacy_start = first_signed.map(|f| {
        entries[..f]
            .iter()
            .rposition(|e| matches!(e.line, AuditLineKind::Start { .. }))
            .filter(|s| last_unsigned.is_none_or(|u| *s > u))
            .unwrap_or(f)
    });
    let start = marker.or(legacy_start).filter(|s| *s > 0);
    if let (Some(start), true) = (start, unsigned > 0 || unsigned_runs) {
        let vouched = match first_signed {
            Some(f) => format!(
                "the first signed checkpoint ({}) vouches that they are unchanged since, not that cordon wrote them",
                entries[f].at
            ),
            None => "no signed checkpoint follows yet".into(),
        };
        report.notes.push(format!(
            "unsigned before signing started at {}: the {start} line(s) from {} to {} were written without \
             audit.signing_key ({unsigned} unsigned checkpoint(s)); {vouched}",
            entries[start].at,
            entries[0].at,
            entries[start - 1].at
        ));
    }
}

/// A run that continues a chain whose last line is not a final (or rotation) checkpoint followed a crash, or
/// lines removed from the end before cordon started again: worth saying, though it proves neither.
pub(super) fn check_restarts(entries: &[AuditLine], report: &mut Report) {
    for pair in entries.windows(2) {
        let (before, start) = (&pair[0], &pair[1]);
        let sealed = before.checkpoint().is_some_and(|c| c.last || c.rotated);
        if matches!(start.line, AuditLineKind::Start { .. }) && before.seq + 1 == start.seq && !sealed {
            report.notes.push(format!(
                "{}: this run continues a chain whose run before did not end with its final checkpoint ({} is \
                 not one): it crashed or was killed, or lines were removed from its end before this start; the \
                 lines since its last checkpoint are vouched for only as they stood when this run started",
                start.at, before.at
            ));
        }
    }
}

/// Signed checkpoints kept elsewhere must be in the files as they were shipped: one that is not, or that
/// covers lines beyond the end of the files, shows lines edited or removed.
pub(super) fn check_anchors(entries: &[AuditLine], anchors: &[Anchor], report: &mut Report) {
    let last = entries.iter().max_by_key(|e| e.seq);
    let first_seq = entries.iter().map(|e| e.seq).min();
    let mut beyond: Option<&Anchor> = None;
    for a in anchors {
        let mut same = entries.iter().filter(|e| e.seq == a.seq).peekable();
        if same.clone().any(|e| e.hash == a.hash) {
            report.anchored += 1;
        } else if let Some(e) = same.peek() {
            report.tampering.push(format!(
                "{}: not the checkpoint shipped as {} (seq {}): the chain was rewritten",
                e.at, a.at, a.seq
            ));
        } else if last.is_none_or(|l| a.seq > l.seq) {
            if beyond.is_none_or(|b| a.seq > b.seq) {
                beyond = Some(a);
            }
        } else if first_seq.is_some_and(|f| a.seq < f) {
            report.notes.push(format!(
                "{}: the checkpoint at seq {} is before the first line given: in files not given, or removed \
                 by retention",
                a.at, a.seq
            ));
        }
    }
    if let Some(a) = beyond {
        report.tampering.push(match last {
            Some(l) => format!(
                "{}: deleted: the files end at seq {}, but the signed checkpoint shipped as {} covers every line up \
                 to seq {}: lines were removed from the end (or the file after this one was deleted)",
                l.at, l.seq, a.at, a.seq
            ),
            None => format!(
                "{}: deleted: the signed checkpoint at seq {} covers lines the files do not hold (they hold none)",
                a.at, a.seq
            ),
        });
    }
}

/// Whether the last line seals the files (cordon's final checkpoint), shows a file missing after it (the
/// checkpoint written before turning to a new file), or leaves the end open; and whether anything is signed.
pub(super) fn check_end(entries: &[AuditLine], report: &mut Report) {
    let Some(last) = entries.last() else {
        report.notes.push("no chained line in the files".into());
        return no_signed_evidence(report);
    };
    match last.checkpoint() {
        Some(c) if c.last => report.sealed = true,
        Some(c) if c.rotated => report.tampering.push(format!(
            "{}: deleted: the files end with the checkpoint cordon writes when it closes a file and goes on in a \
             new one (rotation, reopen), but no file given goes on from seq {}: the file after it (the current \
             one at audit.path) was deleted or emptied, or was not given",
            last.at,
            last.seq + 1
        )),
        _ => match entries.iter().rposition(|e| e.checkpoint().is_some()) {
            Some(k) => report.notes.push(format!(
                "{} line(s) after the last checkpoint ({}) are not covered by a signature, and the log does not end \
                 with cordon's final checkpoint: cordon did not stop cleanly (a crash, SIGKILL), or it is still \
                 writing, or the last lines were removed (the final checkpoint with them) or added; the files \
                 alone cannot tell which, the checkpoints shipped off the machine can (--anchor)",
                entries.len() - 1 - k,
                entries[k].at
            )),
            None => report
                .notes
                .push("no checkpoint at all: nothing is covered by a signature".into()),
        },
    }
    no_signed_evidence(report);
}

fn no_signed_evidence(report: &mut Report) {
    if report.key_checked && report.signed == 0 {
        report.notes.push(
            "no signed evidence: no checkpoint in the files is signed by this key, so nothing shows that cordon \
             wrote these lines (anyone can compute a hash chain): forged, written without audit.signing_key, or \
             from a run that stopped before its first checkpoint"
                .into(),
        );
    }
}

#[cfg(test)]
#[path = "verify_evidence_tests.rs"]
mod tests;
