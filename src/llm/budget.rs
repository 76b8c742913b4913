//! The model budgets a policy sets (`policies.NAME.model_budget`): tokens and cost per window, per sandbox and per
//! user, and what a spent budget does (refuse, or hold the request for a person). Counting is the ledger's
//! (`crate::limits::model_ledger`, shared through PostgreSQL when replicas share a store); this is what is counted
//! against.

use std::time::Duration;

use crate::limits::model_ledger::Cap;
use crate::names::Incarnation;

/// At most `tokens` and `cost` per `window`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Spend {
    /// Input and output tokens.
    pub(crate) tokens: Option<u64>,
    /// Cost, in millionths of the price table's unit.
    pub(crate) cost: Option<u64>,
    /// The window: fixed slots of wall-clock time (`unix seconds / window`), the same on every replica.
    pub(crate) window: Duration,
}

/// What a spent budget does to the next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum OnSpent {
    /// Refused (429 `model_budget_spent`, with `Retry-After`).
    #[default]
    Refuse,
    /// Held for a person, who may let it through.
    Ask,
}

/// A policy's model budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ModelBudget {
    /// Each sandbox's (incarnation's).
    pub(crate) sandbox: Option<Spend>,
    /// Each user's, over all of their sandboxes.
    pub(crate) user: Option<Spend>,
    pub(crate) on_spent: OnSpent,
}

impl ModelBudget {
    /// Whether a cost is limited (then a model without a price cannot be counted, and is refused).
    pub(crate) fn limits_cost(&self) -> bool {
        [self.sandbox, self.user].iter().flatten().any(|s| s.cost.is_some())
    }

    /// The ledger's caps for a request of `incarnation`'s, whose user is `user`.
    pub(crate) fn caps(&self, incarnation: &Incarnation, user: &str) -> Vec<Cap> {
        let mut caps = Vec::with_capacity(2);
        if let Some(s) = self.sandbox {
            caps.push(Cap::new(format!("sandbox:{incarnation}"), s.window, s.tokens, s.cost));
        }
        if let Some(s) = self.user {
            caps.push(Cap::new(format!("user:{user}"), s.window, s.tokens, s.cost));
        }
        caps
    }
}

/// Every policy's model budget.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ModelBudgets {
    pub(crate) policies: std::collections::BTreeMap<String, ModelBudget>,
}

impl ModelBudgets {
    /// The budget of a sandbox of `policy` (its base's, for a sandbox's own policy `base+id`).
    pub(crate) fn of(&self, policy: &str) -> Option<&ModelBudget> {
        if self.policies.is_empty() {
            return None;
        }
        let base = policy.split('+').next().unwrap_or(policy);
        self.policies.get(base)
    }
}

/// A cost in millionths, as the table's unit writes it (`1.25`).
pub(crate) fn units(micros: u64) -> f64 {
    micros as f64 / 1e6
}
