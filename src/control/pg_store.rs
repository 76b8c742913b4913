//! The sandbox records in PostgreSQL (`control.store: postgres://…`): the same operations as the SQLite
//! [`Store`](super::store::Store), each write announced to every replica ([`Event::Sandbox`]) at commit.

use std::sync::Arc;

use tokio_postgres::Row;

use super::store::SandboxRow;
use crate::names::SandboxId;
use crate::pg::listen::{Event, announce};
use crate::pg::{Db, DbError};

const COLUMNS: &str = "id, nonce, owner, policy, labels, created, expires, revoked, source_cidrs, inline_policy";

/// The advisory lock that serializes the creations of sandboxes known by address (no two take one address).
const SOURCES_LOCK: i64 = 0x636f_7264_6f6e_0002;

/// Why a write was not done.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PgStoreError {
    /// The id is held by a live sandbox.
    #[error("sandbox {0:?} already exists")]
    Exists(String),
    /// A source range overlaps one a live sandbox holds: (this one, that one, its id).
    #[error("{0} overlaps {1} of live sandbox {2:?}")]
    Overlap(ipnet::IpNet, ipnet::IpNet, String),
    /// No such (live, for renew) sandbox.
    #[error("no sandbox {0:?}")]
    NotFound(String),
    /// The database failed.
    #[error(transparent)]
    Db(#[from] DbError),
}

/// The `sandboxes` table.
pub(crate) struct PgStore {
    db: Arc<Db>,
}

impl PgStore {
    pub(crate) fn new(db: Arc<Db>) -> PgStore {
        PgStore { db }
    }

    pub(crate) fn db(&self) -> &Arc<Db> {
        &self.db
    }

    /// Insert `record` unless its id is held by a live sandbox (a revoked or expired one is replaced).
    pub(crate) async fn insert(&self, record: &SandboxRow, now: i64) -> Result<(), PgStoreError> {
        let labels = serde_json::to_value(&record.labels).map_err(|e| self.db.corrupt("sandbox", e))?;
        let mut client = self.db.client().await?;
        let what = "adding a sandbox";
        let tx = self.db.outcome(what, client.transaction().await)?;
        // Row lock on the id (or on nothing, when new: the primary key then settles a race).
        let live = tx
            .query_opt(
                "SELECT 1 FROM sandboxes WHERE id = $1 AND revoked IS NULL AND expires > $2 FOR UPDATE",
                &[&record.id.as_str(), &now],
            )
            .await;
        if self.db.outcome(what, live)?.is_some() {
            return Err(PgStoreError::Exists(record.id.to_string()));
        }
        if !record.source_cidrs.is_empty() {
            // SECURITY: one creation by address at a time across replicas, so two cannot take one address.
            self.db.outcome(
                what,
                tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SOURCES_LOCK]).await,
            )?;
            let rows = self.db.outcome(
                what,
                tx.query(
                    &format!(
                        "SELECT {COLUMNS} FROM sandboxes WHERE revoked IS NULL AND expires > $1 AND source_cidrs != '[]'"
                    ),
                    &[&now],
                )
                .await,
            )?;
            let others = rows.iter().map(|r| self.record(r)).collect::<Result<Vec<_>, _>>()?;
            if let Some((mine, theirs, id)) = super::store::first_overlap(record, &others) {
                return Err(PgStoreError::Overlap(mine, theirs, id));
            }
        }
        let cidrs = serde_json::to_value(&record.source_cidrs).map_err(|e| self.db.corrupt("sandbox", e))?;
        let r = tx
            .execute(
                &format!(
                    "INSERT INTO sandboxes ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $10, $11)
                     ON CONFLICT (id) DO UPDATE SET nonce = excluded.nonce, owner = excluded.owner,
                       policy = excluded.policy, labels = excluded.labels, created = excluded.created,
                       expires = excluded.expires, revoked = excluded.revoked, source_cidrs = excluded.source_cidrs,
                       inline_policy = excluded.inline_policy
                     WHERE sandboxes.revoked IS NOT NULL OR sandboxes.expires <= $9"
                ),
                &[
                    &record.id.as_str(),
                    &record.nonce,
                    &record.user,
                    &record.policy,
                    &labels,
                    &record.created,
                    &record.expires,
                    &record.revoked,
                    &now,
                    &cidrs,
                    &record.inline_policy.as_deref(),
                ],
            )
            .await;
        if self.db.outcome(what, r)? == 0 {
            // Another replica made it live between the check and the insert.
            return Err(PgStoreError::Exists(record.id.to_string()));
        }
        self.db
            .outcome(what, announce(&tx, &Event::Sandbox(record.id.clone())).await)?;
        self.db.outcome(what, tx.commit().await)?;
        Ok(())
    }

    /// The record of `id`, revoked and expired ones included.
    pub(crate) async fn get(&self, id: &SandboxId) -> Result<Option<SandboxRow>, DbError> {
        let client = self.db.client().await?;
        let r = client
            .query_opt(
                &format!("SELECT {COLUMNS} FROM sandboxes WHERE id = $1"),
                &[&id.as_str()],
            )
            .await;
        self.db
            .outcome("reading a sandbox", r)?
            .map(|row| self.record(&row))
            .transpose()
    }

    /// Every record.
    pub(crate) async fn all(&self) -> Result<Vec<SandboxRow>, DbError> {
        let client = self.db.client().await?;
        let r = client
            .query(&format!("SELECT {COLUMNS} FROM sandboxes ORDER BY id"), &[])
            .await;
        self.db
            .outcome("listing sandboxes", r)?
            .iter()
            .map(|row| self.record(row))
            .collect()
    }

    /// Move `expires` of a live sandbox.
    pub(crate) async fn renew(&self, id: &SandboxId, expires: i64, now: i64) -> Result<SandboxRow, PgStoreError> {
        self.update(
            "renewing a sandbox",
            id,
            &format!(
                "UPDATE sandboxes SET expires = $2 WHERE id = $1 AND revoked IS NULL AND expires > $3 RETURNING {COLUMNS}"
            ),
            &[&id.as_str(), &expires, &now],
        )
        .await
    }

    /// Give a live sandbox another policy (`inline`: its own document narrowing `policy`).
    pub(crate) async fn set_policy(
        &self,
        id: &SandboxId,
        policy: &str,
        inline: Option<&str>,
        now: i64,
    ) -> Result<SandboxRow, PgStoreError> {
        self.update(
            "changing a sandbox's policy",
            id,
            &format!(
                "UPDATE sandboxes SET policy = $2, inline_policy = $3 WHERE id = $1 AND revoked IS NULL AND expires > $4 \
                 RETURNING {COLUMNS}"
            ),
            &[&id.as_str(), &policy, &inline, &now],
        )
        .await
    }

    /// Mark revoked (the first time stays).
    pub(crate) async fn revoke(&self, id: &SandboxId, now: i64) -> Result<SandboxRow, PgStoreError> {
        self.update(
            "revoking a sandbox",
            id,
            &format!("UPDATE sandboxes SET revoked = coalesce(revoked, $2) WHERE id = $1 RETURNING {COLUMNS}"),
            &[&id.as_str(), &now],
        )
        .await
    }

    /// Delete records that expired before `before`; returns how many.
    pub(crate) async fn purge(&self, before: i64) -> Result<usize, DbError> {
        let client = self.db.client().await?;
        let r = client
            .execute("DELETE FROM sandboxes WHERE expires < $1", &[&before])
            .await;
        let n = self.db.outcome("purging expired sandboxes", r)?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    async fn update(
        &self,
        what: &str,
        id: &SandboxId,
        sql: &str,
        args: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<SandboxRow, PgStoreError> {
        let mut client = self.db.client().await?;
        let tx = self.db.outcome(what, client.transaction().await)?;
        let row = self.db.outcome(what, tx.query_opt(sql, args).await)?;
        let Some(row) = row else {
            return Err(PgStoreError::NotFound(id.to_string()));
        };
        let record = self.record(&row)?;
        self.db
            .outcome(what, announce(&tx, &Event::Sandbox(record.id.clone())).await)?;
        self.db.outcome(what, tx.commit().await)?;
        Ok(record)
    }

    fn record(&self, row: &Row) -> Result<SandboxRow, DbError> {
        let labels: serde_json::Value = row.try_get(4).map_err(|e| self.db.corrupt("sandbox", e))?;
        Ok(SandboxRow {
            id: crate::names::SandboxId::parse(
                &row.try_get::<_, String>(0).map_err(|e| self.db.corrupt("sandbox", e))?,
            )
            .map_err(|e| self.db.corrupt("sandbox", e))?,
            nonce: row.try_get(1).map_err(|e| self.db.corrupt("sandbox", e))?,
            user: row.try_get(2).map_err(|e| self.db.corrupt("sandbox", e))?,
            policy: row.try_get(3).map_err(|e| self.db.corrupt("sandbox", e))?,
            labels: serde_json::from_value(labels).map_err(|e| self.db.corrupt("sandbox", e))?,
            created: row.try_get(5).map_err(|e| self.db.corrupt("sandbox", e))?,
            expires: row.try_get(6).map_err(|e| self.db.corrupt("sandbox", e))?,
            revoked: row.try_get(7).map_err(|e| self.db.corrupt("sandbox", e))?,
            source_cidrs: {
                let v: serde_json::Value = row.try_get(8).map_err(|e| self.db.corrupt("sandbox", e))?;
                serde_json::from_value(v).map_err(|e| self.db.corrupt("sandbox", e))?
            },
            inline_policy: row
                .try_get::<_, Option<String>>(9)
                .map_err(|e| self.db.corrupt("sandbox", e))?
                .map(Arc::from),
        })
    }
}
