//! Refresh-token rows in the PostgreSQL store that replicas share (table `oauth_refresh`, migration 5): each
//! step one transaction, the row locked (`SELECT … FOR UPDATE`) while it is read and its lease taken, so one
//! replica at a time decides, and the lease (not a lock held over the network) makes one refresh at a time.

use std::sync::Arc;

use super::row::{COLUMNS, HeldRow, Step, Stored, decide, now_ms};
use crate::pg::Db;

/// The rows, through the store's pool.
pub(super) struct PgRows {
    db: Arc<Db>,
}

fn row(r: &tokio_postgres::Row) -> Result<HeldRow, tokio_postgres::Error> {
    Ok(HeldRow::from_columns((
        r.try_get(0)?,
        r.try_get(1)?,
        r.try_get(2)?,
        r.try_get(3)?,
        r.try_get(4)?,
        r.try_get(5)?,
        r.try_get(6)?,
    )))
}

impl PgRows {
    pub(super) fn new(db: Arc<Db>) -> PgRows {
        PgRows { db }
    }

    /// One transaction: lock and read the row, decide, and take the lease when that is the step.
    pub(super) async fn step(&self, credential: &str, now: i64, me: &str, lease_until: i64) -> Result<Step, String> {
        let what = "reading a refresh token";
        let mut client = self.db.client().await.map_err(|e| e.to_string())?;
        let tx = self
            .db
            .outcome(what, client.transaction().await)
            .map_err(|e| e.to_string())?;
        let found = tx
            .query_opt(
                &format!("SELECT {COLUMNS} FROM oauth_refresh WHERE credential = $1 FOR UPDATE"),
                &[&credential],
            )
            .await;
        let found = self.db.outcome(what, found).map_err(|e| e.to_string())?;
        let current = match found {
            Some(r) => Some(row(&r).map_err(|e| self.db.corrupt("refresh token", e).to_string())?),
            None => None,
        };
        let step = decide(current.as_ref(), now, me);
        if let Step::Take { generation, .. } = &step {
            let r = tx
                .execute(
                    "UPDATE oauth_refresh SET lease_until = $3, lease_by = $4, updated = $5
                     WHERE credential = $1 AND generation = $2",
                    &[&credential, generation, &lease_until, &me, &now],
                )
                .await;
            self.db
                .outcome("taking a refresh lease", r)
                .map_err(|e| e.to_string())?;
        }
        self.db.outcome(what, tx.commit().await).map_err(|e| e.to_string())?;
        Ok(step)
    }

    /// One statement (one transaction): generation `generation` spent, `token` the next, with its access token.
    pub(super) async fn store(
        &self,
        credential: &str,
        generation: i64,
        token: &[u8],
        access: &[u8],
        expires: i64,
    ) -> Result<Stored, String> {
        let client = self.db.client().await.map_err(|e| e.to_string())?;
        let r = client
            .execute(
                "UPDATE oauth_refresh SET generation = $2 + 1, token = $3, access = $4, access_expires = $5,
                 lease_until = NULL, lease_by = NULL, dead = NULL, updated = $6
                 WHERE credential = $1 AND generation = $2",
                &[&credential, &generation, &token, &access, &expires, &now_ms()],
            )
            .await;
        let n = self
            .db
            .outcome("storing a rotated refresh token", r)
            .map_err(|e| e.to_string())?;
        Ok(Stored { moved: n == 1 })
    }

    /// Release this replica's lease on `generation`, marking the sign-in dead with `dead` when given.
    pub(super) async fn release(
        &self,
        credential: &str,
        generation: i64,
        me: &str,
        dead: Option<&str>,
    ) -> Result<(), String> {
        let client = self.db.client().await.map_err(|e| e.to_string())?;
        let r = client
            .execute(
                "UPDATE oauth_refresh SET lease_until = NULL, lease_by = NULL, dead = coalesce($4, dead), updated = $5
                 WHERE credential = $1 AND generation = $2 AND lease_by = $3",
                &[&credential, &generation, &me, &dead, &now_ms()],
            )
            .await;
        self.db
            .outcome("releasing a refresh lease", r)
            .map(drop)
            .map_err(|e| e.to_string())
    }

    /// One transaction: a seeded refresh token as the next generation.
    pub(super) async fn seed(
        &self,
        credential: &str,
        seal: &(dyn Fn(i64) -> Result<Vec<u8>, String> + Sync),
    ) -> Result<i64, String> {
        let what = "seeding a refresh token";
        let mut client = self.db.client().await.map_err(|e| e.to_string())?;
        let tx = self
            .db
            .outcome(what, client.transaction().await)
            .map_err(|e| e.to_string())?;
        let old = tx
            .query_opt(
                "SELECT generation FROM oauth_refresh WHERE credential = $1 FOR UPDATE",
                &[&credential],
            )
            .await;
        let old = self.db.outcome(what, old).map_err(|e| e.to_string())?;
        let generation = match old {
            Some(r) => {
                r.try_get::<_, i64>(0)
                    .map_err(|e| self.db.corrupt("refresh token", e).to_string())?
                    + 1
            }
            None => 1,
        };
        let token = seal(generation)?;
        let r = tx
            .execute(
                "INSERT INTO oauth_refresh (credential, generation, token, updated) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (credential) DO UPDATE SET generation = $2, token = $3, access = NULL,
                 access_expires = NULL, lease_until = NULL, lease_by = NULL, dead = NULL, updated = $4",
                &[&credential, &generation, &token, &now_ms()],
            )
            .await;
        self.db.outcome(what, r).map_err(|e| e.to_string())?;
        self.db.outcome(what, tx.commit().await).map_err(|e| e.to_string())?;
        Ok(generation)
    }

    /// The row, if any.
    pub(super) async fn read(&self, credential: &str) -> Result<Option<HeldRow>, String> {
        let client = self.db.client().await.map_err(|e| e.to_string())?;
        let r = client
            .query_opt(
                &format!("SELECT {COLUMNS} FROM oauth_refresh WHERE credential = $1"),
                &[&credential],
            )
            .await;
        match self
            .db
            .outcome("reading a refresh token", r)
            .map_err(|e| e.to_string())?
        {
            Some(r) => Ok(Some(
                row(&r).map_err(|e| self.db.corrupt("refresh token", e).to_string())?,
            )),
            None => Ok(None),
        }
    }
}
