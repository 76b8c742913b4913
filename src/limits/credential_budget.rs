//! Usage budgets per credential: requests a credential was applied to, and the bytes those exchanges moved,
//! per (subject, credential) in fixed windows of wall-clock time (`unix seconds / window`, the same slots on every
//! replica). A subject is a sandbox or a user, as the budget says.
//!
//! A request takes its place before it is sent ([`CredentialBudgetCounts::take`]: checked and counted under one lock,
//! so concurrent requests cannot all slip under the count); its bytes are added when the exchange ends
//! ([`CredentialBudgetCounts::add_bytes`]), so the exchange that crosses a byte budget completes and the next is
//! refused.
//!
//! With replicas sharing a store, a flusher (outside this module) takes what was counted here
//! ([`CredentialBudgetCounts::take_unflushed`]), adds it to the shared totals, and brings back every replica's
//! ([`CredentialBudgetCounts::settle`]), as byte budgets are shared: a (subject, credential) is over its budget when the
//! last shared totals plus what this replica counted since reach it. The bound on overshoot is the same: what the
//! other replicas let through in one flush interval.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::LimitRefusal;

use crate::locks::Unpoisoned;
use crate::names::CredentialName;

/// One budget: at most `requests` and `bytes` per `window`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budget {
    /// Requests the credential may be applied to in a window.
    pub(crate) requests: Option<u64>,
    /// Bytes (both ways) its exchanges may move in a window.
    pub(crate) bytes: Option<u64>,
    /// The window (whole seconds, at least one).
    pub(crate) window: Duration,
}

/// Requests and bytes.
type Pair = (u64, u64);

/// What a subject used of one credential in one slot, by where the counts are.
#[derive(Debug, Clone, Copy, Default)]
struct Used {
    slot: u64,
    /// Every replica's counts as the store last said.
    shared: Pair,
    /// Written to the store since, not yet in `shared`.
    written: Pair,
    /// Being written now.
    in_flight: Pair,
    /// Counted here, not yet written.
    unflushed: Pair,
    /// Whether a refusal was already reported in this slot (the first one is announced).
    refused: bool,
}

impl Used {
    fn in_slot(slot: u64) -> Used {
        Used {
            slot,
            ..Used::default()
        }
    }

    fn total(&self) -> Pair {
        let sum = |f: fn(&Pair) -> u64| {
            [self.shared, self.written, self.in_flight, self.unflushed]
                .iter()
                .map(f)
                .fold(0_u64, u64::saturating_add)
        };
        (sum(|p| p.0), sum(|p| p.1))
    }
}

/// Counts of one (subject, credential) to add to the shared totals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unflushed {
    /// The key the counts are shared under.
    pub(crate) key: String,
    /// The slot they are for.
    pub(crate) slot: u64,
    /// When that slot ends (unix seconds).
    pub(crate) ends: u64,
    /// Requests counted.
    pub(crate) requests: u64,
    /// Bytes counted.
    pub(crate) bytes: u64,
}

/// The counts, keyed by (credential, subject, budget).
#[derive(Debug, Default)]
pub(crate) struct CredentialBudgetCounts {
    used: Mutex<HashMap<String, Used>>,
}

/// A refusal, and whether it is the first in its window (to announce it once).
#[derive(Debug)]
pub(crate) struct Spent {
    pub(crate) refusal: LimitRefusal,
    pub(crate) first: bool,
}

impl CredentialBudgetCounts {
    /// Take one request of `credential` for `subject` under `budget`, or refuse when the window's requests or
    /// bytes are spent.
    pub(crate) fn take(&self, credential: &CredentialName, subject: &str, budget: &Budget) -> Result<(), Spent> {
        let (slot, left) = slot(budget.window);
        let mut used = self.used.lock().unpoisoned();
        let u = used.entry(key(credential, subject, budget)).or_default();
        if u.slot != slot {
            *u = Used::in_slot(slot);
        }
        let (requests, bytes) = u.total();
        let over = budget
            .requests
            .filter(|n| requests >= *n)
            .map(|n| format!("{n} requests"))
            .or_else(|| budget.bytes.filter(|n| bytes >= *n).map(|n| format!("{n} bytes")));
        if let Some(what) = over {
            let first = !u.refused;
            u.refused = true;
            return Err(Spent {
                refusal: LimitRefusal {
                    reason: LimitRefusal::CREDENTIAL_BUDGET,
                    retry_after: left,
                    message: format!(
                        "credential {credential} has used its budget of {what} per {} for {subject}; it renews in {}s",
                        humantime::format_duration(budget.window),
                        left.as_secs()
                    ),
                },
                first,
            });
        }
        u.unflushed.0 += 1;
        Ok(())
    }

    /// Add the bytes of an exchange `credential` was applied to.
    pub(crate) fn add_bytes(&self, credential: &CredentialName, subject: &str, budget: &Budget, bytes: u64) {
        let (slot, _) = slot(budget.window);
        let mut used = self.used.lock().unpoisoned();
        let u = used.entry(key(credential, subject, budget)).or_default();
        if u.slot != slot {
            *u = Used::in_slot(slot);
        }
        u.unflushed.1 = u.unflushed.1.saturating_add(bytes);
    }

    /// Take what was counted here since the last flush, to add it to the shared totals.
    pub(crate) fn take_unflushed(&self) -> Vec<Unflushed> {
        let mut used = self.used.lock().unpoisoned();
        let mut out = Vec::new();
        for (k, u) in used.iter_mut() {
            if u.unflushed == (0, 0) {
                continue;
            }
            out.push(Unflushed {
                key: k.clone(),
                slot: u.slot,
                ends: (u.slot + 1).saturating_mul(window_of(k)),
                requests: u.unflushed.0,
                bytes: u.unflushed.1,
            });
            u.in_flight = add(u.in_flight, u.unflushed);
            u.unflushed = (0, 0);
        }
        out
    }

    /// The counts taken by [`CredentialBudgetCounts::take_unflushed`] were written (`true`) or not (`false`: they
    /// go with the next flush).
    pub(crate) fn flushed(&self, written: bool) {
        let mut used = self.used.lock().unpoisoned();
        for u in used.values_mut() {
            if written {
                u.written = add(u.written, u.in_flight);
            } else {
                u.unflushed = add(u.unflushed, u.in_flight);
            }
            u.in_flight = (0, 0);
        }
    }

    /// Every replica's totals of the current slots, `(key, slot, requests, bytes)`, read after the last write.
    pub(crate) fn settle(&self, totals: Vec<(String, u64, u64, u64)>) {
        let mut used = self.used.lock().unpoisoned();
        for u in used.values_mut() {
            u.written = (0, 0);
        }
        for (k, slot, requests, bytes) in totals {
            let u = used.entry(k).or_default();
            if u.slot < slot {
                *u = Used::in_slot(slot);
            }
            if u.slot == slot {
                u.shared = (requests, bytes);
            }
        }
    }

    /// Forget counts of past windows (run now and then).
    pub(crate) fn housekeep(&self) {
        let mut used = self.used.lock().unpoisoned();
        used.retain(|k, u| slot(Duration::from_secs(window_of(k))).0 == u.slot);
    }
}

/// The window, in seconds, a key counts in (its last part).
fn window_of(key: &str) -> u64 {
    key.rsplit('\u{1f}')
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or(1)
        .max(1)
}

fn add(a: Pair, b: Pair) -> Pair {
    (a.0.saturating_add(b.0), a.1.saturating_add(b.1))
}

/// The key of a (credential, subject) under a budget: a budget with another window counts apart.
fn key(credential: &CredentialName, subject: &str, budget: &Budget) -> String {
    format!("{credential}\u{1f}{subject}\u{1f}{}", budget.window.as_secs().max(1))
}

/// The slot of wall-clock time now for `window`, and how long until it ends.
fn slot(window: Duration) -> (u64, Duration) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let w = window.as_secs().max(1);
    (now / w, Duration::from_secs(w - now % w))
}

#[cfg(test)]
#[path = "credential_budget_tests.rs"]
mod tests;
