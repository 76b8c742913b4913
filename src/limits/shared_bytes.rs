//! Byte budgets enforced across replicas sharing a store: each replica counts what it moves here, a flusher
//! (outside this module) adds those counts to the shared totals of the current window every second and brings
//! back every replica's totals. A sandbox is over its budget when the last shared totals plus what this replica
//! moved since reach it. Windows are fixed slots of wall-clock time (`unix seconds / window`), the same on every
//! replica.
//!
//! Overshoot bound: what other replicas moved since their last flush is unseen here, so a sandbox whose traffic is
//! spread over N replicas can pass its budget by at most what the other N-1 replicas move for it in one flush
//! interval (plus the one chunk in flight on each, as without sharing).

use crate::names::Incarnation;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::LimitRefusal;

use crate::locks::Unpoisoned;

/// Bytes (up, down) per sandbox.
pub type Counts = HashMap<String, (u64, u64)>;

#[derive(Default)]
struct SlotTotals {
    /// The slot `totals` are for.
    slot: u64,
    /// Every replica's bytes in `slot`, as of the last flush.
    totals: Counts,
    /// Bytes counted here since the last flush.
    unflushed: Counts,
}

/// The shared byte counts of one replica.
pub struct SharedBytes {
    window: Duration,
    inner: Mutex<SlotTotals>,
}

impl SharedBytes {
    /// Counts for windows of `window` (at least one second).
    pub fn new(window: Duration) -> SharedBytes {
        SharedBytes {
            window: window.max(Duration::from_secs(1)),
            inner: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, SlotTotals> {
        self.inner.lock().unpoisoned()
    }

    /// The slot of wall-clock time now.
    pub fn slot_now(&self) -> u64 {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        now.as_secs() / self.window.as_secs().max(1)
    }

    /// How long until the current slot ends.
    fn left(&self) -> Duration {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let w = self.window.as_secs().max(1);
        Duration::from_secs(w - now.as_secs() % w)
    }

    /// Count bytes moved here.
    pub(crate) fn add(&self, incarnation: &Incarnation, up: u64, down: u64) {
        if up == 0 && down == 0 {
            return;
        }
        let mut inner = self.lock();
        match inner.unflushed.get_mut(incarnation.as_str()) {
            Some(c) => *c = (c.0.saturating_add(up), c.1.saturating_add(down)),
            None => {
                inner.unflushed.insert(incarnation.to_string(), (up, down));
            }
        }
    }

    /// Every replica's bytes of `sandbox` in the current slot, as far as this replica knows.
    pub(crate) fn used(&self, incarnation: &Incarnation) -> (u64, u64) {
        let inner = self.lock();
        let slot_ok = inner.slot == self.slot_now();
        let t = if slot_ok {
            inner.totals.get(incarnation.as_str()).copied().unwrap_or((0, 0))
        } else {
            (0, 0)
        };
        let u = inner.unflushed.get(incarnation.as_str()).copied().unwrap_or((0, 0));
        (t.0.saturating_add(u.0), t.1.saturating_add(u.1))
    }

    /// Take what was counted here since the last flush (to add it to the shared totals).
    pub fn take(&self) -> Counts {
        std::mem::take(&mut self.lock().unflushed)
    }

    /// Put back counts a flush could not write (the store is down): they go with the next one.
    pub fn give_back(&self, counts: Counts) {
        for (incarnation, (up, down)) in counts {
            self.add(&Incarnation::of(incarnation), up, down);
        }
    }

    /// The shared totals of `slot`, after a flush.
    pub fn settle(&self, slot: u64, totals: Counts) {
        let mut inner = self.lock();
        inner.slot = slot;
        inner.totals = totals;
    }

    /// The refusal when `sandbox` has used a budget (`exceeds(used, budget)`), as for one replica alone.
    pub(crate) fn over(
        &self,
        incarnation: &Incarnation,
        upload: Option<u64>,
        download: Option<u64>,
        exceeds: impl Fn(u64, u64) -> bool,
    ) -> Result<(), LimitRefusal> {
        let (up, down) = self.used(incarnation);
        let (reason, direction, budget) = match (upload, download) {
            (Some(budget), _) if exceeds(up, budget) => (LimitRefusal::UPLOAD_BUDGET, "upload", budget),
            (_, Some(budget)) if exceeds(down, budget) => (LimitRefusal::DOWNLOAD_BUDGET, "download", budget),
            _ => return Ok(()),
        };
        let left = self.left();
        Err(LimitRefusal {
            reason,
            retry_after: left,
            message: format!(
                "sandbox {incarnation} has used its {direction} budget of {budget} bytes per {} (over all replicas); it \
                 renews in {}s",
                humantime::format_duration(self.window),
                left.as_secs()
            ),
        })
    }
}

#[cfg(test)]
#[path = "shared_bytes_tests.rs"]
mod tests;
