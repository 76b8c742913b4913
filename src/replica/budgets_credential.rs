//! Credential budgets across replicas sharing a PostgreSQL store, flushed with the byte budgets every second:
//! this replica adds what it counted to the shared totals of each (key, slot), then reads back every replica's
//! totals of the slots not yet over. While the store is down the counts wait and go with the next flush that
//! works; meanwhile each replica enforces on the last totals it read plus what it counted itself.

use crate::limits::CredentialBudgetCounts;
use crate::pg::{Db, DbError};

/// One flush: write what was counted here, read every replica's current totals, forget ended slots.
pub(super) async fn flush(db: &Db, budgets: &CredentialBudgetCounts) -> Result<(), DbError> {
    let counts = budgets.take_unflushed();
    if !counts.is_empty() {
        let (mut keys, mut slots, mut ends, mut requests, mut bytes) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for c in &counts {
            keys.push(c.key.as_str());
            slots.push(big(c.slot));
            ends.push(big(c.ends));
            requests.push(big(c.requests));
            bytes.push(big(c.bytes));
        }
        let written = match db.client().await {
            Ok(client) => {
                let r = client
                    .execute(
                        "INSERT INTO credential_budgets (key, slot, ends, requests, bytes)
                         SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[])
                         ON CONFLICT (key, slot) DO UPDATE SET
                           requests = credential_budgets.requests + excluded.requests,
                           bytes = credential_budgets.bytes + excluded.bytes",
                        &[&keys, &slots, &ends, &requests, &bytes],
                    )
                    .await;
                db.outcome("adding credential budget counts", r).map(|_| ())
            }
            Err(e) => Err(e),
        };
        budgets.flushed(written.is_ok());
        written?;
    }
    let now = big(crate::pg::now().max(0).unsigned_abs());
    let client = db.client().await?;
    let r = client
        .query(
            "SELECT key, slot, requests, bytes FROM credential_budgets WHERE ends > $1",
            &[&now],
        )
        .await;
    let totals = db
        .outcome("reading credential budgets", r)?
        .iter()
        .map(|row| {
            let n = |i: usize| u64::try_from(row.get::<_, i64>(i)).unwrap_or(0);
            (row.get::<_, String>(0), n(1), n(2), n(3))
        })
        .collect();
    budgets.settle(totals);
    let r = client
        .execute("DELETE FROM credential_budgets WHERE ends < $1", &[&(now - 3600)])
        .await;
    db.outcome("forgetting ended credential budgets", r).map(|_| ())
}

fn big(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
