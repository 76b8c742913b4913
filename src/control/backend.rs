//! Where the sandbox records live: the SQLite [`Store`] (one host) or PostgreSQL ([`PgStore`], many hosts),
//! behind one blocking interface for the control plane's blocking calls.

use std::future::Future;

use super::pg_store::{PgStore, PgStoreError};
use super::store::{SandboxRow, Store, StoreError};
use crate::names::SandboxId;
use crate::pg::DbError;

/// The store of run-time sandboxes.
pub(crate) enum Backend {
    /// A SQLite file (or memory).
    Sqlite(Store),
    /// PostgreSQL, shared with replicas on other hosts.
    Postgres(PgStore),
}

impl From<PgStoreError> for StoreError {
    fn from(e: PgStoreError) -> Self {
        match e {
            PgStoreError::Exists(id) => StoreError::Exists(id),
            PgStoreError::NotFound(id) => StoreError::NotFound(id),
            PgStoreError::Overlap(a, b, id) => StoreError::Overlap(a, b, id),
            PgStoreError::Db(e) => e.into(),
        }
    }
}

impl From<DbError> for StoreError {
    fn from(e: DbError) -> Self {
        match e {
            DbError::Unavailable { .. } => StoreError::Unavailable(e.to_string()),
            _ => StoreError::Db(e.to_string()),
        }
    }
}

/// Run `fut` to completion on the runtime from a blocking thread (`spawn_blocking`), where the PostgreSQL
/// backend's calls come from. Never call it from a task.
fn wait<T>(fut: impl Future<Output = Result<T, StoreError>>) -> Result<T, StoreError> {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle.block_on(fut),
        Err(_) => Err(StoreError::Db("the PostgreSQL store needs the async runtime".into())),
    }
}

impl Backend {
    /// Whether records are shared with replicas that announce their writes (PostgreSQL).
    pub(crate) fn shared(&self) -> Option<&PgStore> {
        match self {
            Backend::Postgres(p) => Some(p),
            Backend::Sqlite(_) => None,
        }
    }

    /// Where the store is, for messages.
    pub(crate) fn location(&self) -> String {
        match self {
            Backend::Sqlite(s) => s.location(),
            Backend::Postgres(p) => p.db().location().to_owned(),
        }
    }

    pub(crate) fn insert(&self, record: &SandboxRow, now: i64) -> Result<(), StoreError> {
        match self {
            Backend::Sqlite(s) => s.insert(record, now),
            Backend::Postgres(p) => wait(async { Ok(p.insert(record, now).await?) }),
        }
    }

    pub(crate) fn get(&self, id: &SandboxId) -> Result<Option<SandboxRow>, StoreError> {
        match self {
            Backend::Sqlite(s) => s.get(id),
            Backend::Postgres(p) => wait(async { Ok(p.get(id).await?) }),
        }
    }

    pub(crate) fn all(&self) -> Result<Vec<SandboxRow>, StoreError> {
        match self {
            Backend::Sqlite(s) => s.all(),
            Backend::Postgres(p) => wait(async { Ok(p.all().await?) }),
        }
    }

    pub(crate) fn renew(&self, id: &SandboxId, expires: i64, now: i64) -> Result<SandboxRow, StoreError> {
        match self {
            Backend::Sqlite(s) => s.renew(id, expires, now),
            Backend::Postgres(p) => wait(async { Ok(p.renew(id, expires, now).await?) }),
        }
    }

    pub(crate) fn set_policy(
        &self,
        id: &SandboxId,
        policy: &str,
        inline: Option<&str>,
        now: i64,
    ) -> Result<SandboxRow, StoreError> {
        match self {
            Backend::Sqlite(s) => s.set_policy(id, policy, inline, now),
            Backend::Postgres(p) => wait(async { Ok(p.set_policy(id, policy, inline, now).await?) }),
        }
    }

    pub(crate) fn revoke(&self, id: &SandboxId, now: i64) -> Result<SandboxRow, StoreError> {
        match self {
            Backend::Sqlite(s) => s.revoke(id, now),
            Backend::Postgres(p) => wait(async { Ok(p.revoke(id, now).await?) }),
        }
    }

    pub(crate) fn purge(&self, before: i64) -> Result<usize, StoreError> {
        match self {
            Backend::Sqlite(s) => s.purge(before),
            Backend::Postgres(p) => wait(async { Ok(p.purge(before).await?) }),
        }
    }

    /// Whether another process wrote (SQLite); PostgreSQL's writes are announced instead, so never.
    pub(crate) fn changed_elsewhere(&self) -> Result<bool, StoreError> {
        match self {
            Backend::Sqlite(s) => s.changed_elsewhere(),
            Backend::Postgres(_) => Ok(false),
        }
    }
}
