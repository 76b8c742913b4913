//! The jails running on this host, counted per user so that a user runs at most `limits.per_user.jails` at
//! once: a table `jails` in a SQLite file (the `control.store` file when the configuration has one, else a file
//! of the jails' own), a row per running jail, taken in one transaction with the count, so that two jails
//! starting at once cannot both take the last place. A row is live while its process is (pid and start time,
//! as `/proc` says them); rows of jails that ended without removing theirs (killed) are dropped when counted.

use std::path::Path;
use std::time::Duration;

use crate::names::SandboxId;
use rusqlite::{Connection, TransactionBehavior, params};

/// How long a jail waits for another's transaction on the file.
const BUSY: Duration = Duration::from_secs(5);

/// A running jail's place, given back when dropped.
pub(crate) struct Place {
    conn: Connection,
    id: i64,
}

impl Drop for Place {
    fn drop(&mut self) {
        let _ = self.conn.execute("DELETE FROM jails WHERE id = ?1", params![self.id]);
    }
}

/// The start time of `pid` (clock ticks after boot), which a reused pid does not share.
fn started(pid: i32) -> Option<u64> {
    procfs::process::Process::new(pid)
        .ok()?
        .stat()
        .ok()
        .map(|s| s.starttime)
}

fn e(file: &Path) -> impl Fn(rusqlite::Error) -> String + '_ {
    move |err| format!("the jails' count in {}: {err}", file.display())
}

/// Take a place for the jail of `sandbox` run for `user` by this process in `file`, unless `user` runs `most`
/// jails already: then why not, naming them. When `file` is the `control.store` (`store`), it is made a store
/// first (the sandbox store's schema, as `cordon run` makes it), so that a store that did not exist yet is one
/// the jail's own proxy then opens, not "a SQLite database of something else" with only this table.
pub(crate) fn take(file: &Path, sandbox: &SandboxId, user: &str, most: u32, store: bool) -> Result<Place, String> {
    super::store_file::prepare_file(file).map_err(|err| format!("cannot create {}: {err}", file.display()))?;
    let mut conn = Connection::open(file).map_err(e(file))?;
    conn.busy_timeout(BUSY).map_err(e(file))?;
    if store {
        super::store::migrate(&mut conn, &file.display().to_string()).map_err(|err| err.to_string())?;
    }
    conn.execute(
        "CREATE TABLE IF NOT EXISTS jails (id INTEGER PRIMARY KEY, sandbox TEXT NOT NULL, user TEXT NOT NULL, \
         pid INTEGER NOT NULL, started INTEGER NOT NULL)",
        [],
    )
    .map_err(e(file))?;
    let pid = i32::try_from(std::process::id()).map_err(|err| err.to_string())?;
    let me = started(pid).unwrap_or(0);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(e(file))?;
    let rows: Vec<(i64, String, String, i32, i64)> = {
        let mut q = tx
            .prepare("SELECT id, sandbox, user, pid, started FROM jails")
            .map_err(e(file))?;
        q.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
            .map_err(e(file))?
            .collect::<Result<_, _>>()
            .map_err(e(file))?
    };
    let mut theirs = Vec::new();
    for (id, other, who, p, at) in rows {
        let live = started(p).is_some_and(|s| i64::try_from(s).ok() == Some(at));
        if !live {
            tx.execute("DELETE FROM jails WHERE id = ?1", params![id])
                .map_err(e(file))?;
        } else if who == user {
            theirs.push(other);
        }
    }
    // SECURITY: counted and taken in one transaction: two jails starting at once cannot both take the last place.
    if theirs.len() >= usize::try_from(most).unwrap_or(usize::MAX) {
        return Err(format!(
            "user {user} runs {} jail(s) on this host already (sandboxes {}), as many as limits.per_user.jails \
             ({most}) allows; stop one first",
            theirs.len(),
            theirs.join(", ")
        ));
    }
    tx.execute(
        "INSERT INTO jails (sandbox, user, pid, started) VALUES (?1, ?2, ?3, ?4)",
        params![sandbox.as_str(), user, pid, i64::try_from(me).unwrap_or(0)],
    )
    .map_err(e(file))?;
    let id = tx.last_insert_rowid();
    tx.commit().map_err(e(file))?;
    Ok(Place { conn, id })
}

#[cfg(test)]
#[path = "jails_tests.rs"]
mod tests;
