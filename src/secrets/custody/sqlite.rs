//! Refresh-token rows in the SQLite store (`control.store: FILE`): their own table in the same file, each
//! step one `BEGIN IMMEDIATE` transaction (so replicas sharing the file take turns), WAL, synchronous=FULL (a
//! commit is on disk when it returns).

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};

use super::row::{COLUMNS, HeldRow, Step, Stored, decide, now_ms};
use crate::locks::Unpoisoned;

const TABLE: &str = "
CREATE TABLE IF NOT EXISTS oauth_refresh (
    credential     TEXT PRIMARY KEY NOT NULL,
    generation     INTEGER NOT NULL,
    token          BLOB NOT NULL,
    access         BLOB,
    access_expires INTEGER,
    lease_until    INTEGER,
    lease_by       TEXT,
    dead           TEXT,
    updated        INTEGER NOT NULL
);
";

/// The rows, through one connection of this process.
pub(super) struct SqliteRows {
    conn: Mutex<Connection>,
    location: String,
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<HeldRow> {
    Ok(HeldRow::from_columns((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
    )))
}

impl SqliteRows {
    /// Open the store's file (it is the sandbox store's: the folder and file checks are the same) and make the
    /// table if it is missing.
    pub(super) fn open(path: &Path) -> Result<SqliteRows, String> {
        let location = path.display().to_string();
        let fail = |e: &dyn std::fmt::Display| format!("cannot open the refresh-token store {location}: {e}");
        crate::control::store_file::check_folder(path)?;
        crate::control::store_file::prepare_file(path).map_err(|e| fail(&e))?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| fail(&e))?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(|e| fail(&e))?;
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "wal", |r| r.get(0))
            .map_err(|e| fail(&e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(fail(&format_args!("journal mode is {mode:?}, not WAL")));
        }
        conn.pragma_update(None, "synchronous", "FULL").map_err(|e| fail(&e))?;
        conn.execute_batch(TABLE).map_err(|e| fail(&e))?;
        Ok(SqliteRows {
            conn: Mutex::new(conn),
            location,
        })
    }

    fn fail(&self, what: &str, e: rusqlite::Error) -> String {
        format!("cannot {what} in the store {}: {e}", self.location)
    }

    /// One transaction: read the row, decide, and take the lease when that is the step.
    pub(super) fn step(&self, credential: &str, now: i64, me: &str, lease_until: i64) -> Result<Step, String> {
        let what = "read a refresh token";
        let mut conn = self.conn.lock().unpoisoned();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.fail(what, e))?;
        let current = tx
            .query_row(
                &format!("SELECT {COLUMNS} FROM oauth_refresh WHERE credential = ?1"),
                params![credential],
                row,
            )
            .optional()
            .map_err(|e| self.fail(what, e))?;
        let step = decide(current.as_ref(), now, me);
        if let Step::Take { generation, .. } = &step {
            tx.execute(
                "UPDATE oauth_refresh SET lease_until = ?3, lease_by = ?4, updated = ?5
                 WHERE credential = ?1 AND generation = ?2",
                params![credential, generation, lease_until, me, now],
            )
            .map_err(|e| self.fail("take the refresh lease", e))?;
        }
        tx.commit().map_err(|e| self.fail(what, e))?;
        Ok(step)
    }

    /// One transaction: generation `generation` is spent, `token` is the next, with its access token; only if the
    /// row is still at `generation`.
    pub(super) fn store(
        &self,
        credential: &str,
        generation: i64,
        token: &[u8],
        access: &[u8],
        expires: i64,
    ) -> Result<Stored, String> {
        let conn = self.conn.lock().unpoisoned();
        let n = conn
            .execute(
                "UPDATE oauth_refresh SET generation = ?2 + 1, token = ?3, access = ?4, access_expires = ?5,
                 lease_until = NULL, lease_by = NULL, dead = NULL, updated = ?6
                 WHERE credential = ?1 AND generation = ?2",
                params![credential, generation, token, access, expires, now_ms()],
            )
            .map_err(|e| self.fail("store a rotated refresh token", e))?;
        Ok(Stored { moved: n == 1 })
    }

    /// Release this replica's lease on `generation`, marking the sign-in dead with `dead` when given.
    pub(super) fn release(
        &self,
        credential: &str,
        generation: i64,
        me: &str,
        dead: Option<&str>,
    ) -> Result<(), String> {
        let conn = self.conn.lock().unpoisoned();
        conn.execute(
            "UPDATE oauth_refresh SET lease_until = NULL, lease_by = NULL, dead = coalesce(?4, dead), updated = ?5
             WHERE credential = ?1 AND generation = ?2 AND lease_by = ?3",
            params![credential, generation, me, dead, now_ms()],
        )
        .map_err(|e| self.fail("release a refresh lease", e))?;
        Ok(())
    }

    /// One transaction: a seeded refresh token as the next generation.
    pub(super) fn seed(&self, credential: &str, seal: &dyn Fn(i64) -> Result<Vec<u8>, String>) -> Result<i64, String> {
        let what = "seed a refresh token";
        let mut conn = self.conn.lock().unpoisoned();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.fail(what, e))?;
        let old: Option<i64> = tx
            .query_row(
                "SELECT generation FROM oauth_refresh WHERE credential = ?1",
                params![credential],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.fail(what, e))?;
        let generation = old.map_or(1, |g| g + 1);
        let token = seal(generation)?;
        tx.execute(
            "INSERT OR REPLACE INTO oauth_refresh (credential, generation, token, updated) VALUES (?1, ?2, ?3, ?4)",
            params![credential, generation, token, now_ms()],
        )
        .map_err(|e| self.fail(what, e))?;
        tx.commit().map_err(|e| self.fail(what, e))?;
        Ok(generation)
    }

    /// The row, if any.
    pub(super) fn read(&self, credential: &str) -> Result<Option<HeldRow>, String> {
        let conn = self.conn.lock().unpoisoned();
        conn.query_row(
            &format!("SELECT {COLUMNS} FROM oauth_refresh WHERE credential = ?1"),
            params![credential],
            row,
        )
        .optional()
        .map_err(|e| self.fail("read a refresh token", e))
    }
}
