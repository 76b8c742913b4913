//! How many activity records a jail writes: within each window of [`WINDOW`], the first [`PER_KEY`] events of one
//! folder (or one program) and at most [`MOST`] events in all are recorded one by one; the rest are counted and
//! written as one summary per folder (or program) when the window closes. A build that writes 100,000 files
//! leaves a few thousand records, not 100,000, and the summaries say what was not written one by one.
//!
//! Keys are resolved paths (the folder a file is in, the program), so a command cannot make a summary per call
//! by spelling one folder many ways. What the tally holds is bounded all the same: at most [`MOST_KEYS`] keys and
//! [`MOST_BYTES`] of their names per window, and [`MOST_BY`] kinds per key; an event past those bounds is counted
//! under [`OVERFLOW`] (one summary for all of them, by operation or folder), never dropped.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// The window events are counted in.
pub(crate) const WINDOW: Duration = Duration::from_secs(10);
/// Events of one key recorded one by one per window.
const PER_KEY: u64 = 16;
/// Events recorded one by one per window in all.
const MOST: u64 = 512;
/// Keys counted per window.
pub(crate) const MOST_KEYS: usize = 4096;
/// Bytes of key names (and kinds) held per window.
pub(crate) const MOST_BYTES: usize = 4 << 20;
/// Kinds counted per key (operations of a folder, folders of a program); the rest under `other`.
const MOST_BY: usize = 32;
/// The key of the events past [`MOST_KEYS`] or [`MOST_BYTES`].
pub(crate) const OVERFLOW: &str = "*";

/// What was counted and not recorded, for one key.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct UnrecordedCount {
    /// In all.
    pub(crate) count: u64,
    /// By operation.
    pub(crate) by: BTreeMap<String, u64>,
}

/// The counts of the current window.
#[derive(Debug)]
pub(crate) struct Tally {
    started: Instant,
    shown: u64,
    /// Bytes of names held.
    bytes: usize,
    keys: HashMap<String, (u64, UnrecordedCount)>,
    /// Events past the bounds, by kind (`exec` or `file`).
    overflow: BTreeMap<&'static str, UnrecordedCount>,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            started: Instant::now(),
            shown: 0,
            bytes: 0,
            keys: HashMap::new(),
            overflow: BTreeMap::new(),
        }
    }
}

/// Count `what` in `counted`, within [`MOST_BY`] kinds and `room` bytes (else as `other`); the bytes a new
/// kind adds.
fn count(counted: &mut UnrecordedCount, what: &str, room: usize) -> usize {
    counted.count += 1;
    if let Some(n) = counted.by.get_mut(what) {
        *n += 1;
        return 0;
    }
    let (what, added) = if counted.by.len() < MOST_BY && what.len() <= room {
        (what, what.len())
    } else {
        ("other", 0)
    };
    *counted.by.entry(what.to_owned()).or_default() += 1;
    added
}

impl Tally {
    /// Whether the event `what` of `key` (of `kind`, `exec` or `file`) is recorded one by one; else it is counted
    /// for the key's summary.
    pub(crate) fn admit(&mut self, kind: &'static str, key: &str, what: &str) -> bool {
        let full = format!("{kind} {key}");
        if !self.keys.contains_key(&full) {
            if self.keys.len() >= MOST_KEYS || self.bytes + full.len() > MOST_BYTES {
                let room = MOST_BYTES.saturating_sub(self.bytes);
                self.bytes += count(self.overflow.entry(kind).or_default(), what, room);
                return false;
            }
            self.bytes += full.len();
        }
        let (seen, counted) = self.keys.entry(full).or_default();
        *seen += 1;
        if *seen <= PER_KEY && self.shown < MOST {
            self.shown += 1;
            return true;
        }
        self.bytes += count(counted, what, MOST_BYTES.saturating_sub(self.bytes));
        false
    }

    /// Whether the window has closed.
    pub(crate) fn due(&self) -> bool {
        self.started.elapsed() >= WINDOW
    }

    /// Close the window: the summaries (kind, key, counts) of the keys that had events counted, the overflow
    /// last, and a fresh window.
    pub(crate) fn close(&mut self) -> Vec<(&'static str, String, UnrecordedCount)> {
        let keys = std::mem::take(&mut self.keys);
        let overflow = std::mem::take(&mut self.overflow);
        self.started = Instant::now();
        self.shown = 0;
        self.bytes = 0;
        let mut out: Vec<(&'static str, String, UnrecordedCount)> = keys
            .into_iter()
            .filter(|(_, (_, c))| c.count > 0)
            .filter_map(|(k, (_, c))| {
                let (kind, key) = k.split_once(' ')?;
                let kind = if kind == "exec" { "exec" } else { "file" };
                Some((kind, key.to_owned(), c))
            })
            .collect();
        out.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        out.extend(overflow.into_iter().map(|(kind, c)| (kind, OVERFLOW.to_owned(), c)));
        out
    }
}

#[cfg(test)]
#[path = "rate_tests.rs"]
mod tests;
