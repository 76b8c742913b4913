//! Pending approvals shared through PostgreSQL: each replica publishes the asks it holds, any replica lists
//! them all and may decide one; the decision is written to the ask's row and announced
//! ([`Event::Approval`]), and the replica holding the request applies it (within a second; at once normally).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::types::{Approval, Reach, Ruling};
use crate::pg::listen::{Event, announce};
use crate::pg::{Db, DbError};

/// The longest a held request waits for its ask to be published before it waits for the decision anyway.
const PUBLISH_TIMEOUT: Duration = Duration::from_secs(1);

/// A decision as written to an ask's row.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Written {
    pub(crate) verdict: Ruling,
    pub(crate) scope: Reach,
    pub(crate) by: String,
}

/// The `approvals` table as one replica uses it.
pub(crate) struct SharedApprovals {
    db: Arc<Db>,
    replica: String,
    /// Rows older than this are leftovers (a replica that died holding them) and are not listed.
    stale_after: i64,
}

impl SharedApprovals {
    /// Asks of `replica`, which times them out after `timeout`.
    pub(crate) fn new(db: Arc<Db>, replica: String, timeout: Duration) -> SharedApprovals {
        let stale_after = i64::try_from(timeout.as_secs())
            .unwrap_or(i64::MAX / 2)
            .saturating_add(60);
        SharedApprovals {
            db,
            replica,
            stale_after,
        }
    }

    /// The database.
    pub(super) fn db(&self) -> &Db {
        &self.db
    }

    /// Publish an ask this replica holds (bounded: a store that is down delays nobody by more than a second).
    pub(crate) async fn publish(&self, pending: &Approval) {
        let write = async {
            let body = serde_json::to_value(pending).map_err(|e| self.db.corrupt("approval", e))?;
            let client = self.db.client().await?;
            let r = client
                .execute(
                    "INSERT INTO approvals (id, replica, pending, created) VALUES ($1, $2, $3, $4)
                     ON CONFLICT (id) DO NOTHING",
                    &[&pending.id, &self.replica, &body, &crate::pg::now()],
                )
                .await;
            self.db.outcome("publishing an approval", r).map(|_| ())
        };
        match tokio::time::timeout(PUBLISH_TIMEOUT, write).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(id = %pending.id, "approval held but not shared with other replicas: {e}"),
            Err(_) => {
                tracing::warn!(id = %pending.id, "approval held but not shared: the store did not answer in time")
            }
        }
    }

    /// Remove an ask that ended (decided, timed out or withdrawn).
    pub(crate) async fn withdraw(&self, id: &str) {
        if let Ok(client) = self.db.client().await {
            let r = client.execute("DELETE FROM approvals WHERE id = $1", &[&id]).await;
            let _ = self.db.outcome("withdrawing an approval", r);
        }
    }

    /// Every undecided ask of every replica, oldest first, as the API shows them.
    pub(crate) async fn list(&self) -> Result<Vec<Value>, DbError> {
        let client = self.db.client().await?;
        let since = crate::pg::now() - self.stale_after;
        let r = client
            .query(
                "SELECT pending FROM approvals WHERE decision IS NULL AND created >= $1 ORDER BY created, id",
                &[&since],
            )
            .await;
        Ok(self
            .db
            .outcome("listing approvals", r)?
            .iter()
            .map(|row| row.get::<_, Value>(0))
            .collect())
    }

    /// Decide an ask another replica holds: `Ok(None)` if there is no such undecided ask.
    pub(crate) async fn decide(&self, id: &str, decision: &Written) -> Result<Option<Value>, DbError> {
        let body = serde_json::to_value(decision).map_err(|e| self.db.corrupt("approval", e))?;
        let what = "deciding an approval";
        let mut client = self.db.client().await?;
        let tx = self.db.outcome(what, client.transaction().await)?;
        let row = self.db.outcome(
            what,
            tx.query_opt(
                "UPDATE approvals SET decision = $2 WHERE id = $1 AND decision IS NULL RETURNING pending",
                &[&id, &body],
            )
            .await,
        )?;
        let Some(row) = row else { return Ok(None) };
        self.db
            .outcome(what, announce(&tx, &Event::Approval(id.to_owned())).await)?;
        self.db.outcome(what, tx.commit().await)?;
        Ok(Some(row.get(0)))
    }

    /// The decision written for `id`, if any.
    pub(crate) async fn decision(&self, id: &str) -> Result<Option<Written>, DbError> {
        let client = self.db.client().await?;
        let r = client
            .query_opt("SELECT decision FROM approvals WHERE id = $1", &[&id])
            .await;
        let Some(row) = self.db.outcome("reading a decision", r)? else {
            return Ok(None);
        };
        let Some(v) = row.get::<_, Option<Value>>(0) else {
            return Ok(None);
        };
        serde_json::from_value(v)
            .map(Some)
            .map_err(|e| self.db.corrupt("approval decision", e))
    }
}
