//! Byte budgets across replicas sharing a PostgreSQL store: every second, this replica adds what it counted to
//! the shared totals of the current slot and reads back every replica's (see [`SharedBytes`] for the bound on
//! overshoot). While the store is down the counts wait and go with the next flush that works; meanwhile each
//! replica enforces the budget on the last totals it read plus what it moved itself. Credential budgets are
//! flushed in the same beat (`budgets_credential.rs`).

use std::sync::Weak;
use std::time::Duration;

use super::store::SharedStore;
use crate::limits::{Counts, CredentialBudgetCounts, SharedBytes};
use crate::pg::{Db, DbError};

/// How often counts are flushed and totals read.
const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// Flush `store`'s byte counts and the `credentials` budgets' counts until either is dropped.
pub(crate) async fn flush_forever(store: Weak<SharedStore>, credentials: Weak<CredentialBudgetCounts>) {
    let mut ticks: u64 = 0;
    loop {
        tokio::time::sleep(FLUSH_EVERY).await;
        let (Some(store), Some(credentials)) = (store.upgrade(), credentials.upgrade()) else {
            return;
        };
        ticks += 1;
        if let Err(e) = flush(&store.db, &store.bytes, ticks.is_multiple_of(600)).await {
            tracing::debug!("byte counts not shared this time: {e}");
        }
        if let Err(e) = super::budgets_credential::flush(&store.db, &credentials).await {
            tracing::debug!("credential budget counts not shared this time: {e}");
        }
    }
}

/// One flush: add the counts taken from `bytes`, read the slot's totals, and (with `tidy`) forget old slots.
async fn flush(db: &Db, bytes: &SharedBytes, tidy: bool) -> Result<(), DbError> {
    let slot = bytes.slot_now();
    let counts = bytes.take();
    let written = write(db, slot, &counts).await;
    if let Err(e) = written {
        bytes.give_back(counts);
        return Err(e);
    }
    let slot_i = i64::try_from(slot).unwrap_or(i64::MAX);
    let client = db.client().await?;
    let r = client
        .query(
            "SELECT sandbox, up_bytes, down_bytes FROM budgets WHERE slot = $1",
            &[&slot_i],
        )
        .await;
    let totals: Counts = db
        .outcome("reading byte budgets", r)?
        .iter()
        .map(|row| {
            let up: i64 = row.get(1);
            let down: i64 = row.get(2);
            (
                row.get::<_, String>(0),
                (u64::try_from(up).unwrap_or(0), u64::try_from(down).unwrap_or(0)),
            )
        })
        .collect();
    bytes.settle(slot, totals);
    if tidy {
        let r = client
            .execute("DELETE FROM budgets WHERE slot < $1", &[&(slot_i - 1)])
            .await;
        db.outcome("forgetting old byte budgets", r)?;
    }
    Ok(())
}

async fn write(db: &Db, slot: u64, counts: &Counts) -> Result<(), DbError> {
    if counts.is_empty() {
        return Ok(());
    }
    let slot = i64::try_from(slot).unwrap_or(i64::MAX);
    let (mut sandboxes, mut ups, mut downs) = (Vec::new(), Vec::new(), Vec::new());
    for (sandbox, (up, down)) in counts {
        sandboxes.push(sandbox.as_str());
        ups.push(i64::try_from(*up).unwrap_or(i64::MAX));
        downs.push(i64::try_from(*down).unwrap_or(i64::MAX));
    }
    let client = db.client().await?;
    let r = client
        .execute(
            "INSERT INTO budgets (sandbox, slot, up_bytes, down_bytes)
             SELECT s, $1, u, d FROM unnest($2::text[], $3::bigint[], $4::bigint[]) AS t(s, u, d)
             ON CONFLICT (sandbox, slot) DO UPDATE SET up_bytes = budgets.up_bytes + excluded.up_bytes,
               down_bytes = budgets.down_bytes + excluded.down_bytes",
            &[&slot, &sandboxes, &ups, &downs],
        )
        .await;
    db.outcome("adding byte counts", r).map(|_| ())
}
