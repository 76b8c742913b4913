//! How many activity records a jail writes: within each window of [`WINDOW`], the first [`PER_KEY`] events of one
//! folder (or one program) and at most [`MOST`] events in all are recorded one by one; the rest are counted and
//! written as one summary per folder (or program) when the window closes. A build that writes 100,000 files
//! leaves a few thousand records, not 100,000, and the summaries say what was not written one by one.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// The window events are counted in.
pub(crate) const WINDOW: Duration = Duration::from_secs(10);
/// Events of one key recorded one by one per window.
const PER_KEY: u64 = 16;
/// Events recorded one by one per window in all.
const MOST: u64 = 512;

/// What was counted and not recorded, for one key.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Counted {
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
    keys: HashMap<String, (u64, Counted)>,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            started: Instant::now(),
            shown: 0,
            keys: HashMap::new(),
        }
    }
}

impl Tally {
    /// Whether the event `what` of `key` is recorded one by one; else it is counted for the key's summary.
    pub(crate) fn admit(&mut self, key: &str, what: &str) -> bool {
        let (seen, counted) = self.keys.entry(key.to_owned()).or_default();
        *seen += 1;
        if *seen <= PER_KEY && self.shown < MOST {
            self.shown += 1;
            return true;
        }
        counted.count += 1;
        *counted.by.entry(what.to_owned()).or_default() += 1;
        false
    }

    /// Whether the window has closed.
    pub(crate) fn due(&self) -> bool {
        self.started.elapsed() >= WINDOW
    }

    /// Close the window: the summaries of the keys that had events counted, and a fresh window.
    pub(crate) fn close(&mut self) -> Vec<(String, Counted)> {
        let keys = std::mem::take(&mut self.keys);
        self.started = Instant::now();
        self.shown = 0;
        let mut out: Vec<(String, Counted)> = keys
            .into_iter()
            .filter(|(_, (_, c))| c.count > 0)
            .map(|(k, (_, c))| (k, c))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }
}

#[cfg(test)]
#[path = "rate_tests.rs"]
mod tests;
