//! The replica registry: each replica writes a heartbeat row every [`HEARTBEAT`]; a replica seen within
//! [`LIVE_WITHIN`] is live. The live count is what shares of local limits are computed from.

use std::sync::Arc;
use std::time::Duration;

use super::{Db, DbError, now};

/// How often a replica writes its heartbeat.
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(2);
/// How recent a heartbeat must be for its replica to count as live, in seconds.
pub(crate) const LIVE_WITHIN: i64 = 10;
/// Rows of replicas silent for longer than this are deleted, in seconds.
const FORGET_AFTER: i64 = 24 * 3600;

/// One replica as `GET /v1/replicas` shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Replica {
    /// Its id.
    pub(crate) id: String,
    /// The host it runs on.
    pub(crate) host: String,
    /// Its cordon version.
    pub(crate) version: String,
    /// Unix seconds when it started.
    pub(crate) started: i64,
    /// Unix seconds of its last heartbeat.
    pub(crate) seen: i64,
    /// Whether its heartbeat is recent.
    pub(crate) live: bool,
    /// Whether it is the replica answering.
    #[serde(rename = "self")]
    pub(crate) this: bool,
}

/// This replica's entry in the registry.
pub(crate) struct Registry {
    db: Arc<Db>,
    id: String,
    host: String,
    started: i64,
}

impl Registry {
    /// This replica, not yet registered (see [`Registry::beat`]).
    pub(crate) fn new(db: Arc<Db>) -> Result<Registry, String> {
        let host = nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .unwrap_or_else(|| "unknown".into());
        let id = format!("{host}-{}", crate::secret_file::random_hex(4)?);
        Ok(Registry {
            db,
            id,
            host,
            started: now(),
        })
    }

    /// This replica's id.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// Write the heartbeat and count the live replicas; returns the count.
    pub(crate) async fn beat(&self) -> Result<usize, DbError> {
        let client = self.db.client().await?;
        let t = now();
        let r = client
            .execute(
                "INSERT INTO replicas (id, host, version, started, seen) VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (id) DO UPDATE SET seen = excluded.seen",
                &[&self.id, &self.host, &env!("CARGO_PKG_VERSION"), &self.started, &t],
            )
            .await;
        self.db.outcome("a heartbeat", r)?;
        let r = client
            .execute("DELETE FROM replicas WHERE seen < $1", &[&(t - FORGET_AFTER)])
            .await;
        self.db.outcome("forgetting silent replicas", r)?;
        let r = client
            .query_one("SELECT count(*) FROM replicas WHERE seen >= $1", &[&(t - LIVE_WITHIN)])
            .await;
        let n: i64 = self.db.outcome("counting replicas", r)?.get(0);
        Ok(usize::try_from(n).unwrap_or(1).max(1))
    }

    /// Every replica in the registry, by id.
    pub(crate) async fn list(&self) -> Result<Vec<Replica>, DbError> {
        let client = self.db.client().await?;
        let r = client
            .query("SELECT id, host, version, started, seen FROM replicas ORDER BY id", &[])
            .await;
        let rows = self.db.outcome("listing replicas", r)?;
        let t = now();
        Ok(rows
            .iter()
            .map(|row| {
                let id: String = row.get(0);
                let seen: i64 = row.get(4);
                Replica {
                    this: id == self.id,
                    id,
                    host: row.get(1),
                    version: row.get(2),
                    started: row.get(3),
                    seen,
                    live: seen >= t - LIVE_WITHIN,
                }
            })
            .collect())
    }

    /// Leave the registry (a clean shutdown), so the others' shares grow at once.
    pub(crate) async fn leave(&self) {
        if let Ok(client) = self.db.client().await {
            let _ = client.execute("DELETE FROM replicas WHERE id = $1", &[&self.id]).await;
        }
    }
}
