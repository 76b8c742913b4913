//! Usage budgets per credential: requests a credential was applied to, and the bytes those exchanges moved,
//! per (subject, credential) in fixed windows of wall-clock time (`unix seconds / window`, the same slots on every
//! replica). A subject is a sandbox or a user, as the budget says.
//!
//! A request takes its place before it is sent ([`CredentialBudgets::take`]: checked and counted under one lock,
//! so concurrent requests cannot all slip under the count); its bytes are added when the exchange ends
//! ([`CredentialBudgets::add_bytes`]), so the exchange that crosses a byte budget completes and the next is
//! refused.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::Refusal;

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

/// What a subject used of one credential in one slot.
#[derive(Debug, Clone, Copy, Default)]
struct Used {
    slot: u64,
    requests: u64,
    bytes: u64,
    /// Whether a refusal was already reported in this slot (the first one is announced).
    refused: bool,
}

/// The counts, keyed by (credential, subject, budget).
#[derive(Debug, Default)]
pub(crate) struct CredentialBudgets {
    used: Mutex<HashMap<String, Used>>,
}

/// A refusal, and whether it is the first in its window (to announce it once).
#[derive(Debug)]
pub(crate) struct Spent {
    pub(crate) refusal: Refusal,
    pub(crate) first: bool,
}

impl CredentialBudgets {
    /// Take one request of `credential` for `subject` under `budget`, or refuse when the window's requests or
    /// bytes are spent.
    pub(crate) fn take(&self, credential: &str, subject: &str, budget: &Budget) -> Result<(), Spent> {
        let (slot, left) = slot(budget.window);
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        let u = used.entry(key(credential, subject, budget)).or_default();
        if u.slot != slot {
            *u = Used {
                slot,
                ..Used::default()
            };
        }
        let over = budget
            .requests
            .filter(|n| u.requests >= *n)
            .map(|n| format!("{n} requests"))
            .or_else(|| budget.bytes.filter(|n| u.bytes >= *n).map(|n| format!("{n} bytes")));
        if let Some(what) = over {
            let first = !u.refused;
            u.refused = true;
            return Err(Spent {
                refusal: Refusal {
                    reason: Refusal::CREDENTIAL_BUDGET,
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
        u.requests += 1;
        Ok(())
    }

    /// Add the bytes of an exchange `credential` was applied to.
    pub(crate) fn add_bytes(&self, credential: &str, subject: &str, budget: &Budget, bytes: u64) {
        let (slot, _) = slot(budget.window);
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        let u = used.entry(key(credential, subject, budget)).or_default();
        if u.slot != slot {
            *u = Used {
                slot,
                ..Used::default()
            };
        }
        u.bytes = u.bytes.saturating_add(bytes);
    }

    /// Forget counts of past windows (run now and then).
    pub(crate) fn housekeep(&self) {
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        used.retain(|k, u| {
            let window = k.rsplit('\u{1f}').next().and_then(|w| w.parse().ok()).unwrap_or(1);
            slot(Duration::from_secs(window)).0 == u.slot
        });
    }
}

/// The key of a (credential, subject) under a budget: a budget with another window counts apart.
fn key(credential: &str, subject: &str, budget: &Budget) -> String {
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
