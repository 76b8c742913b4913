//! The durable store of sandboxes created at run time through the admin API.
//!
//! It is one SQLite file in WAL mode: several cordon processes (replicas on one host, or sharing a
//! volume) may open the same file at once, and each sees the others' commits. Credentials are
//! never stored (they are signed tokens); the store holds only sandbox records.

use std::collections::BTreeMap;
use std::fmt::Display;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use crate::names::SandboxId;
use rusqlite::types::Type;
use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, TransactionBehavior, params};

/// The schema this code writes and understands (`PRAGMA user_version`).
const SCHEMA_VERSION: i64 = 3;

/// How long a statement waits for another connection's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Schema version 1.
const SCHEMA_V1: &str = "
CREATE TABLE IF NOT EXISTS sandboxes (
    id      TEXT PRIMARY KEY NOT NULL,
    nonce   TEXT NOT NULL,
    user    TEXT NOT NULL,
    policy  TEXT NOT NULL,
    labels  TEXT NOT NULL,
    created INTEGER NOT NULL,
    expires INTEGER NOT NULL,
    revoked INTEGER
);
CREATE INDEX IF NOT EXISTS sandboxes_expires ON sandboxes (expires);
PRAGMA user_version = 1;
";

/// Schema version 2: sandboxes known by source address (a JSON list of CIDRs).
const SCHEMA_V2: &str = "
ALTER TABLE sandboxes ADD COLUMN source_cidrs TEXT NOT NULL DEFAULT '[]';
PRAGMA user_version = 2;
";

/// Schema version 3: sandboxes with their own policy (the JSON document, narrowing `policy`).
const SCHEMA_V3: &str = "
ALTER TABLE sandboxes ADD COLUMN inline_policy TEXT;
PRAGMA user_version = 3;
";

/// The columns of a record, in the order [`record_from_row`] reads them.
const COLUMNS: &str = "id, nonce, user, policy, labels, created, expires, revoked, source_cidrs, inline_policy";

/// One sandbox created at run time.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SandboxRow {
    /// The sandbox's name, unique among the records.
    pub(crate) id: SandboxId,
    /// Random per creation; credentials carry it, so a re-created id does not revive old credentials.
    pub(crate) nonce: String,
    /// Who created it.
    pub(crate) user: String,
    /// The name of the policy it runs under.
    pub(crate) policy: String,
    /// Free-form labels given at creation.
    pub(crate) labels: BTreeMap<String, String>,
    /// Unix seconds.
    pub(crate) created: i64,
    /// Unix seconds; renew moves it.
    pub(crate) expires: i64,
    /// Unix seconds when revoked, if it was.
    pub(crate) revoked: Option<i64>,
    /// Source ranges that identify it without a credential (VMs and containers known by address).
    #[serde(default)]
    pub(crate) source_cidrs: Vec<ipnet::IpNet>,
    /// Its own policy (a JSON document that narrows `policy`, which is then the base), if it has one.
    #[serde(default)]
    pub(crate) inline_policy: Option<std::sync::Arc<str>>,
}

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreError {
    /// Inserting an id whose existing row is neither revoked nor expired.
    #[error("sandbox {0:?} already exists")]
    Exists(String),
    /// No such sandbox (or, for renew, none that is still live).
    #[error("no sandbox {0:?}")]
    NotFound(String),
    /// A source range overlaps one that a live sandbox holds.
    #[error("{0} overlaps {1} of live sandbox {2:?}")]
    Overlap(ipnet::IpNet, ipnet::IpNet, String),
    /// Any database failure, with what was being done.
    #[error("{0}")]
    Db(String),
    /// The shared store cannot be reached now; nothing was done.
    #[error("{0}")]
    Unavailable(String),
}

/// The connection and what `changed_elsewhere` last saw.
struct StoreConn {
    /// The one connection of this store.
    conn: Connection,
    /// `PRAGMA data_version` at the last `changed_elsewhere` call.
    seen: Option<i64>,
}

/// A handle on the sandbox store; share it between threads behind an `Arc`.
pub(crate) struct Store {
    /// The connection, one user at a time.
    inner: Mutex<StoreConn>,
    /// Where the store is, for messages.
    location: String,
}

impl Store {
    /// Open (creating the file, its parent folder with 0700 perms, and the schema) a store at `path`; WAL mode,
    /// synchronous=FULL, busy_timeout 5 s. A file this creates is 0600 on unix.
    pub(crate) fn open(path: &Path) -> Result<Store, StoreError> {
        let location = path.display().to_string();
        let fail = |e: &dyn Display| StoreError::Db(format!("cannot open the sandbox store {location}: {e}"));
        super::store_file::check_folder(path).map_err(StoreError::Db)?;
        super::store_file::prepare_file(path).map_err(|e| fail(&e))?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Connection::open_with_flags(path, flags).map_err(|e| fail(&e))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| fail(&e))?;
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "wal", |row| row.get(0))
            .map_err(|e| fail(&e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(fail(&format_args!(
                "cannot use write-ahead logging (journal mode is {mode:?})"
            )));
        }
        conn.pragma_update(None, "synchronous", "FULL").map_err(|e| fail(&e))?;
        migrate(&mut conn, &location)?;
        Ok(Store::wrap(conn, location))
    }

    /// A private in-memory store (nothing survives the process).
    pub(crate) fn in_memory() -> Result<Store, StoreError> {
        let location = "memory".to_owned();
        let mut conn = Connection::open_in_memory()
            .map_err(|e| StoreError::Db(format!("cannot open the sandbox store {location}: {e}")))?;
        migrate(&mut conn, &location)?;
        Ok(Store::wrap(conn, location))
    }

    /// Where it is, for messages ("memory" for in_memory).
    pub(crate) fn location(&self) -> String {
        self.location.clone()
    }

    /// Insert a new record in one transaction. If a row with this id exists and is revoked or expired at `now`, it
    /// is replaced; otherwise [`StoreError::Exists`].
    pub(crate) fn insert(&self, record: &SandboxRow, now: i64) -> Result<(), StoreError> {
        let what = format!("add sandbox {:?} to", record.id);
        let labels = serde_json::to_string(&record.labels).map_err(|e| self.db(&what, e))?;
        let mut inner = self.lock()?;
        let tx = inner
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.db(&what, e))?;
        let live: Option<i64> = tx
            .query_row(
                "SELECT 1 FROM sandboxes WHERE id = ?1 AND revoked IS NULL AND expires > ?2",
                params![record.id.as_str(), now],
                |row| row.get(0),
            )
            .optional()
            .map_err(|e| self.db(&what, e))?;
        if live.is_some() {
            return Err(StoreError::Exists(record.id.to_string()));
        }
        if !record.source_cidrs.is_empty() {
            // In the same transaction as the insert: two creations cannot both take one address.
            let mut stmt = tx
                .prepare(&format!(
                    "SELECT {COLUMNS} FROM sandboxes WHERE revoked IS NULL AND expires > ?1 AND source_cidrs != '[]'"
                ))
                .map_err(|e| self.db(&what, e))?;
            let others = stmt
                .query_map(params![now], record_from_row)
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<SandboxRow>>>())
                .map_err(|e| self.db(&what, e))?;
            if let Some((mine, theirs, id)) = first_overlap(record, &others) {
                return Err(StoreError::Overlap(mine, theirs, id));
            }
        }
        let cidrs = serde_json::to_string(&record.source_cidrs).map_err(|e| self.db(&what, e))?;
        tx.execute(
            &format!("INSERT OR REPLACE INTO sandboxes ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"),
            params![
                record.id.as_str(),
                record.nonce,
                record.user,
                record.policy,
                labels,
                record.created,
                record.expires,
                record.revoked,
                cidrs,
                record.inline_policy.as_deref()
            ],
        )
        .map_err(|e| self.db(&what, e))?;
        tx.commit().map_err(|e| self.db(&what, e))
    }

    /// The record with this id (revoked/expired ones included).
    pub(crate) fn get(&self, id: &SandboxId) -> Result<Option<SandboxRow>, StoreError> {
        let inner = self.lock()?;
        select_one(&inner.conn, id).map_err(|e| self.db(&format!("read sandbox {id:?} from"), e))
    }

    /// Every record, ordered by id.
    pub(crate) fn all(&self) -> Result<Vec<SandboxRow>, StoreError> {
        let inner = self.lock()?;
        let read = || -> rusqlite::Result<Vec<SandboxRow>> {
            let mut stmt = inner
                .conn
                .prepare(&format!("SELECT {COLUMNS} FROM sandboxes ORDER BY id"))?;
            let rows = stmt.query_map([], record_from_row)?;
            rows.collect()
        };
        read().map_err(|e| self.db("list the sandboxes in", e))
    }

    /// Set `expires` of a live (not revoked, not expired at `now`) sandbox; [`StoreError::NotFound`] otherwise.
    /// Returns the updated record.
    pub(crate) fn renew(&self, id: &SandboxId, expires: i64, now: i64) -> Result<SandboxRow, StoreError> {
        self.update(
            &format!("renew sandbox {id:?} in"),
            id,
            "UPDATE sandboxes SET expires = ?2 WHERE id = ?1 AND revoked IS NULL AND expires > ?3",
            params![id.as_str(), expires, now],
        )
    }

    /// Give a live sandbox another policy (`inline`: its own document narrowing `policy`). Returns the record.
    pub(crate) fn set_policy(
        &self,
        id: &SandboxId,
        policy: &str,
        inline: Option<&str>,
        now: i64,
    ) -> Result<SandboxRow, StoreError> {
        self.update(
            &format!("change the policy of sandbox {id:?} in"),
            id,
            "UPDATE sandboxes SET policy = ?2, inline_policy = ?3 WHERE id = ?1 AND revoked IS NULL AND expires > ?4",
            params![id.as_str(), policy, inline, now],
        )
    }

    /// Mark revoked at `now` (idempotent: revoking twice keeps the first time). [`StoreError::NotFound`] if no
    /// such id. Returns the record.
    pub(crate) fn revoke(&self, id: &SandboxId, now: i64) -> Result<SandboxRow, StoreError> {
        self.update(
            &format!("revoke sandbox {id:?} in"),
            id,
            "UPDATE sandboxes SET revoked = coalesce(revoked, ?2) WHERE id = ?1",
            params![id.as_str(), now],
        )
    }

    /// Delete rows whose `expires` is before `before` (revoked or not). Returns how many.
    pub(crate) fn purge(&self, before: i64) -> Result<usize, StoreError> {
        let what = "purge expired sandboxes from";
        let mut inner = self.lock()?;
        let tx = inner
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.db(what, e))?;
        let deleted = tx
            .execute("DELETE FROM sandboxes WHERE expires < ?1", params![before])
            .map_err(|e| self.db(what, e))?;
        tx.commit().map_err(|e| self.db(what, e))?;
        Ok(deleted)
    }

    /// Whether another connection (another process) committed since the last call (first call: true).
    ///
    /// It reads `PRAGMA data_version`, which changes only for commits by other connections; this process's own
    /// writes go through this same store, so the caller already knows about those.
    pub(crate) fn changed_elsewhere(&self) -> Result<bool, StoreError> {
        let mut inner = self.lock()?;
        let version: i64 = inner
            .conn
            .pragma_query_value(None, "data_version", |row| row.get(0))
            .map_err(|e| self.db("check for changes in", e))?;
        let changed = inner.seen != Some(version);
        inner.seen = Some(version);
        Ok(changed)
    }

    /// Wrap an open, migrated connection.
    fn wrap(conn: Connection, location: String) -> Store {
        Store {
            inner: Mutex::new(StoreConn { conn, seen: None }),
            location,
        }
    }

    /// The connection, or a Db error if a thread panicked while holding it.
    fn lock(&self) -> Result<MutexGuard<'_, StoreConn>, StoreError> {
        self.inner.lock().map_err(|_| {
            StoreError::Db(format!(
                "the sandbox store {} is unusable: a thread panicked while using it",
                self.location
            ))
        })
    }

    /// A Db error saying what could not be done: "cannot {what} the sandbox store {location}: {e}".
    fn db(&self, what: &str, e: impl Display) -> StoreError {
        StoreError::Db(format!("cannot {what} the sandbox store {}: {e}", self.location))
    }

    /// Run one UPDATE on the row `id` in a transaction and return the row; NotFound if it changed nothing.
    fn update(
        &self,
        what: &str,
        id: &SandboxId,
        sql: &str,
        args: impl rusqlite::Params,
    ) -> Result<SandboxRow, StoreError> {
        let mut inner = self.lock()?;
        let tx = inner
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.db(what, e))?;
        if tx.execute(sql, args).map_err(|e| self.db(what, e))? == 0 {
            return Err(StoreError::NotFound(id.to_string()));
        }
        let record = select_one(&tx, id).map_err(|e| self.db(what, e))?;
        tx.commit().map_err(|e| self.db(what, e))?;
        record.ok_or_else(|| StoreError::NotFound(id.to_string()))
    }
}

/// Bring the schema to [`SCHEMA_VERSION`] in one transaction, refusing a newer one or someone else's database.
pub(super) fn migrate(conn: &mut Connection, location: &str) -> Result<(), StoreError> {
    let fail = |e: &dyn Display| StoreError::Db(format!("cannot open the sandbox store {location}: {e}"));
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| fail(&e))?;
    let version: i64 = tx
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(|e| fail(&e))?;
    if version > SCHEMA_VERSION {
        return Err(fail(&format_args!(
            "it was written by a newer cordon (schema version {version}; this one knows up to {SCHEMA_VERSION})"
        )));
    }
    if version == 0 {
        let objects: i64 = tx
            // The held sign-ins' table (`secrets::custody`) may be made first, by a process that opened it first.
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE tbl_name != 'oauth_refresh'",
                [],
                |row| row.get(0),
            )
            .map_err(|e| fail(&e))?;
        if objects > 0 {
            return Err(fail(
                &"it is a SQLite database of something else (it has tables but no cordon schema)",
            ));
        }
        tx.execute_batch(SCHEMA_V1).map_err(|e| fail(&e))?;
    }
    if version < 2 {
        tx.execute_batch(SCHEMA_V2).map_err(|e| fail(&e))?;
    }
    if version < 3 {
        tx.execute_batch(SCHEMA_V3).map_err(|e| fail(&e))?;
    }
    tx.commit().map_err(|e| fail(&e))
}

/// The record with this id, if any.
fn select_one(conn: &Connection, id: &SandboxId) -> rusqlite::Result<Option<SandboxRow>> {
    conn.query_row(
        &format!("SELECT {COLUMNS} FROM sandboxes WHERE id = ?1"),
        params![id.as_str()],
        record_from_row,
    )
    .optional()
}

/// A record from a row of [`COLUMNS`].
fn record_from_row(row: &Row<'_>) -> rusqlite::Result<SandboxRow> {
    let labels: String = row.get(4)?;
    let labels = serde_json::from_str(&labels)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(4, Type::Text, Box::new(e)))?;
    Ok(SandboxRow {
        id: SandboxId::parse(&row.get::<_, String>(0)?)
            .map_err(|e| rusqlite::Error::FromSqlConversionFailure(0, Type::Text, Box::new(e)))?,
        nonce: row.get(1)?,
        user: row.get(2)?,
        policy: row.get(3)?,
        labels,
        created: row.get(5)?,
        expires: row.get(6)?,
        revoked: row.get(7)?,
        source_cidrs: {
            let text: String = row.get(8)?;
            serde_json::from_str(&text)
                .map_err(|e| rusqlite::Error::FromSqlConversionFailure(8, Type::Text, Box::new(e)))?
        },
        inline_policy: row.get::<_, Option<String>>(9)?.map(std::sync::Arc::from),
    })
}

/// The first of `record`'s source ranges that overlaps one of `others` (another sandbox than itself): (its
/// range, the other's, the other's id).
pub(crate) fn first_overlap(
    record: &SandboxRow,
    others: &[SandboxRow],
) -> Option<(ipnet::IpNet, ipnet::IpNet, String)> {
    others.iter().filter(|o| o.id != record.id).find_map(|o| {
        record.source_cidrs.iter().find_map(|mine| {
            o.source_cidrs
                .iter()
                .find(|theirs| mine.contains(*theirs) || theirs.contains(mine))
                .map(|theirs| (*mine, *theirs, o.id.to_string()))
        })
    })
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
