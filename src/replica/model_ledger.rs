//! Model budgets across replicas sharing a PostgreSQL store: every admission is one conditional update per cap
//! (`... DO UPDATE ... WHERE` the slot's tokens and cost are under the cap, `RETURNING`), all of a request's caps
//! in one transaction, so two replicas can never both admit past a spent budget by reading before they write.
//! What an answer used is added to the slots it was admitted in; a charge the store could not take waits in memory
//! and goes with the next one that works (counted late, never lost while this replica lives).

use std::sync::{Arc, Mutex};

use crate::limits::model_ledger::{Admitted, BudgetSpent, Cap, Ledger, ModelLedger, ModelUsed, Unavailable};
use crate::locks::Unpoisoned;
use crate::pg::Db;

/// The ledger a replica counts model budgets in: the shared store's, or (without one) its own in memory.
pub(crate) fn ledger(shared: Option<&super::SharedStore>) -> Ledger {
    match shared {
        Some(store) => Ledger(Arc::new(PgLedger::new(store.db.clone()))),
        None => Ledger::default(),
    }
}

/// A charge waiting for the store: (key, slot, when the slot ends, tokens, cost).
type Charge = (String, u64, u64, u64, u64);

/// The ledger in the shared store.
pub(crate) struct PgLedger {
    db: Arc<Db>,
    /// Charges the store did not take yet: (key, slot, ends, tokens, cost).
    owed: Mutex<Vec<Charge>>,
}

impl PgLedger {
    /// The ledger of `db`.
    pub(crate) fn new(db: Arc<Db>) -> PgLedger {
        PgLedger {
            db,
            owed: Mutex::new(Vec::new()),
        }
    }

    /// Add `charges` to their slots in one statement.
    async fn write(&self, charges: &[Charge]) -> Result<(), String> {
        let (mut keys, mut slots, mut ends, mut tokens, mut costs) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (k, s, e, t, c) in charges {
            keys.push(k.as_str());
            slots.push(big(*s));
            ends.push(big(*e));
            tokens.push(big(*t));
            costs.push(big(*c));
        }
        let client = self.db.client().await.map_err(|e| e.to_string())?;
        let r = client
            .execute(
                "INSERT INTO model_budgets (key, slot, ends, tokens, cost)
                 SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[])
                 ON CONFLICT (key, slot) DO UPDATE SET
                   tokens = model_budgets.tokens + excluded.tokens,
                   cost = model_budgets.cost + excluded.cost",
                &[&keys, &slots, &ends, &tokens, &costs],
            )
            .await;
        self.db
            .outcome("charging model budgets", r)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

fn big(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn small(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

#[async_trait::async_trait]
impl ModelLedger for PgLedger {
    async fn admit(&self, caps: &[Cap], now: u64) -> Result<Result<Admitted, BudgetSpent>, Unavailable> {
        let fail = |e: String| Unavailable(format!("{}: {e}", self.db.location()));
        let mut client = self.db.client().await.map_err(|e| fail(e.to_string()))?;
        let tx = client.transaction().await;
        let tx = self
            .db
            .outcome("admitting against model budgets", tx)
            .map_err(|e| fail(e.to_string()))?;
        let mut admitted = Admitted::default();
        for cap in caps {
            let (slot, ends) = (cap.slot(now), cap.ends(cap.slot(now)));
            // SECURITY: one conditional update, not a read and then a write: the row is locked by the update,
            // so no other replica's admission can slip between the check and the count.
            let r = tx
                .query_opt(
                    "INSERT INTO model_budgets AS b (key, slot, ends, requests) VALUES ($1, $2, $3, 1)
                     ON CONFLICT (key, slot) DO UPDATE SET requests = b.requests + 1
                       WHERE ($4::bigint IS NULL OR b.tokens < $4) AND ($5::bigint IS NULL OR b.cost < $5)
                     RETURNING tokens, cost, requests",
                    &[
                        &cap.key,
                        &big(slot),
                        &big(ends),
                        &cap.tokens.map(big),
                        &cap.cost.map(big),
                    ],
                )
                .await;
            let row = self
                .db
                .outcome("admitting against a model budget", r)
                .map_err(|e| fail(e.to_string()))?;
            if row.is_none() {
                // BudgetSpent: nothing of this request is counted (the transaction is rolled back when dropped).
                let r = tx
                    .query_one(
                        "SELECT tokens, cost, requests FROM model_budgets WHERE key = $1 AND slot = $2",
                        &[&cap.key, &big(slot)],
                    )
                    .await;
                let row = self
                    .db
                    .outcome("reading a model budget", r)
                    .map_err(|e| fail(e.to_string()))?;
                return Ok(Err(BudgetSpent {
                    cap: cap.clone(),
                    used: ModelUsed {
                        tokens: small(row.get(0)),
                        cost: small(row.get(1)),
                        requests: small(row.get(2)),
                    },
                    retry_after: std::time::Duration::from_secs(ends.saturating_sub(now)),
                }));
            }
            admitted.slots.push((cap.key.clone(), slot, ends));
        }
        let r = tx.commit().await;
        self.db
            .outcome("admitting against model budgets", r)
            .map_err(|e| fail(e.to_string()))?;
        Ok(Ok(admitted))
    }

    async fn charge(&self, admitted: &Admitted, tokens: u64, cost: u64) {
        if admitted.slots.is_empty() || (tokens == 0 && cost == 0) {
            return;
        }
        let mut charges = std::mem::take(&mut *self.owed.lock().unpoisoned());
        charges.extend(admitted.slots.iter().map(|(k, s, e)| (k.clone(), *s, *e, tokens, cost)));
        if let Err(e) = self.write(&charges).await {
            tracing::warn!(
                "cannot charge model budgets ({} charges wait for the next): {e}",
                charges.len()
            );
            let mut owed = self.owed.lock().unpoisoned();
            // Bounded: what waits longer than its slot counts for nothing anyway.
            let now = crate::limits::model_ledger::unix_now();
            charges.retain(|c| c.2 > now);
            owed.extend(charges);
        }
    }

    async fn used(&self, cap: &Cap, now: u64) -> Result<ModelUsed, Unavailable> {
        let fail = |e: String| Unavailable(format!("{}: {e}", self.db.location()));
        let client = self.db.client().await.map_err(|e| fail(e.to_string()))?;
        let r = client
            .query_opt(
                "SELECT tokens, cost, requests FROM model_budgets WHERE key = $1 AND slot = $2",
                &[&cap.key, &big(cap.slot(now))],
            )
            .await;
        let row = self
            .db
            .outcome("reading a model budget", r)
            .map_err(|e| fail(e.to_string()))?;
        Ok(row.map_or_else(ModelUsed::default, |row| ModelUsed {
            tokens: small(row.get(0)),
            cost: small(row.get(1)),
            requests: small(row.get(2)),
        }))
    }

    fn housekeep(&self, now: u64) {
        let db = self.db.clone();
        // Slots that ended an hour ago count for nothing; any replica may forget them.
        tokio::spawn(async move {
            if let Ok(client) = db.client().await {
                let r = client
                    .execute(
                        "DELETE FROM model_budgets WHERE ends < $1",
                        &[&big(now.saturating_sub(3600))],
                    )
                    .await;
                let _ = db.outcome("forgetting ended model budgets", r);
            }
        });
    }
}
