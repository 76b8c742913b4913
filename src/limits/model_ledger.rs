//! The ledger of model budgets: tokens and cost per key (`sandbox:ID@user`, `user:NAME`) per slot of a window.
//! A request is admitted before it is sent ([`ModelLedger::admit`]: one atomic check-and-count over every cap that
//! applies, in memory under one lock, on PostgreSQL one conditional update per cap in one transaction); what its
//! answer used is charged when the answer ends ([`ModelLedger::charge`]), in the slot it was admitted in.
//!
//! So an answer that crosses a budget is let finish and counted, and the next request is refused. Over-spend is
//! bounded by what was in flight: the requests admitted while the budget was not yet spent, each adding what its
//! answer used (docs/src/model-apis.md measures it).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::locks::Unpoisoned;

/// One budget a request counts against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cap {
    /// What it counts for: `sandbox:ID@user` or `user:NAME`.
    pub key: String,
    /// The window (whole seconds, at least one).
    pub window: Duration,
    /// Input and output tokens per window.
    pub tokens: Option<u64>,
    /// Cost per window, in millionths of the price table's unit.
    pub cost: Option<u64>,
}

impl Cap {
    /// A cap of `key` per `window`.
    pub fn new(key: String, window: Duration, tokens: Option<u64>, cost: Option<u64>) -> Cap {
        Cap {
            key,
            window: window.max(Duration::from_secs(1)),
            tokens,
            cost,
        }
    }

    fn secs(&self) -> u64 {
        self.window.as_secs().max(1)
    }

    /// The slot of wall-clock time `now` (unix seconds) is in.
    pub fn slot(&self, now: u64) -> u64 {
        now / self.secs()
    }

    /// When `slot` ends (unix seconds).
    pub fn ends(&self, slot: u64) -> u64 {
        slot.saturating_add(1).saturating_mul(self.secs())
    }

    /// Whether `used` (tokens, cost) has spent it: all of a limit used.
    pub fn spent_by(&self, used: ModelUsed) -> bool {
        self.tokens.is_some_and(|t| used.tokens >= t) || self.cost.is_some_and(|c| used.cost >= c)
    }
}

/// What a key used in one slot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ModelUsed {
    /// Input and output tokens.
    pub tokens: u64,
    /// Cost, in millionths.
    pub cost: u64,
    /// Requests admitted.
    pub requests: u64,
}

/// A cap that was spent when a request asked to be admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetSpent {
    /// The cap.
    pub cap: Cap,
    /// What its key used in the slot.
    pub used: ModelUsed,
    /// Until the slot ends.
    pub retry_after: Duration,
}

/// Where a request was admitted: the slot of each cap it counts against, which its answer is charged to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Admitted {
    /// (key, slot, when the slot ends).
    pub slots: Vec<(String, u64, u64)>,
}

/// The ledger could not be read or written (the shared store is down): a request cannot be admitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the model budget ledger is unavailable: {0}")]
pub struct Unavailable(pub String);

/// The seconds since the epoch now.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

/// Counts model budgets: this replica's alone, or every replica's through a shared store.
#[async_trait::async_trait]
pub trait ModelLedger: Send + Sync {
    /// Admit a request against every one of `caps` at `now` (unix seconds): each counts one request more, or, when
    /// one is spent, none does and the first spent is said.
    async fn admit(&self, caps: &[Cap], now: u64) -> Result<Result<Admitted, BudgetSpent>, Unavailable>;

    /// Charge what an admitted request's answer used to the slots it was admitted in.
    async fn charge(&self, admitted: &Admitted, tokens: u64, cost: u64);

    /// What `cap`'s key used in the slot of `now`.
    async fn used(&self, cap: &Cap, now: u64) -> Result<ModelUsed, Unavailable>;

    /// Forget what ended before `now` (unix seconds), where that is this replica's to do.
    fn housekeep(&self, _now: u64) {}
}

/// The ledger a replica counts in: its own ([`MemoryLedger`], the default) or the shared store's.
#[derive(Clone)]
pub struct Ledger(pub std::sync::Arc<dyn ModelLedger>);

impl Default for Ledger {
    fn default() -> Ledger {
        Ledger(std::sync::Arc::new(MemoryLedger::default()))
    }
}

/// The ledger of one replica, in memory.
#[derive(Debug, Default)]
pub struct MemoryLedger {
    used: Mutex<HashMap<(String, u64), (ModelUsed, u64)>>,
}

#[async_trait::async_trait]
impl ModelLedger for MemoryLedger {
    async fn admit(&self, caps: &[Cap], now: u64) -> Result<Result<Admitted, BudgetSpent>, Unavailable> {
        let mut used = self.used.lock().unpoisoned();
        // SECURITY: checked and counted under one lock: concurrent requests cannot all slip under a spent budget.
        for cap in caps {
            let slot = cap.slot(now);
            let u = used.get(&(cap.key.clone(), slot)).map(|e| e.0).unwrap_or_default();
            if cap.spent_by(u) {
                return Ok(Err(BudgetSpent {
                    cap: cap.clone(),
                    used: u,
                    retry_after: Duration::from_secs(cap.ends(slot).saturating_sub(now)),
                }));
            }
        }
        let mut admitted = Admitted::default();
        for cap in caps {
            let slot = cap.slot(now);
            let ends = cap.ends(slot);
            let e = used
                .entry((cap.key.clone(), slot))
                .or_insert((ModelUsed::default(), ends));
            e.0.requests = e.0.requests.saturating_add(1);
            admitted.slots.push((cap.key.clone(), slot, ends));
        }
        Ok(Ok(admitted))
    }

    async fn charge(&self, admitted: &Admitted, tokens: u64, cost: u64) {
        let mut used = self.used.lock().unpoisoned();
        for (key, slot, ends) in &admitted.slots {
            let e = used
                .entry((key.clone(), *slot))
                .or_insert((ModelUsed::default(), *ends));
            e.0.tokens = e.0.tokens.saturating_add(tokens);
            e.0.cost = e.0.cost.saturating_add(cost);
        }
    }

    async fn used(&self, cap: &Cap, now: u64) -> Result<ModelUsed, Unavailable> {
        let used = self.used.lock().unpoisoned();
        Ok(used
            .get(&(cap.key.clone(), cap.slot(now)))
            .map(|e| e.0)
            .unwrap_or_default())
    }

    fn housekeep(&self, now: u64) {
        let mut used = self.used.lock().unpoisoned();
        used.retain(|_, (_, ends)| *ends > now);
        used.shrink_to_fit();
    }
}

#[cfg(test)]
#[path = "model_ledger_tests.rs"]
mod tests;
