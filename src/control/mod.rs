//! The control plane's model: sandboxes created at run time, the checks that judge them (expiry, revocation,
//! labels, their own policy), and the durable store they live in: SQLite (a file several processes on one host
//! may share) or PostgreSQL (shared by replicas). What each sandbox has open is `session`'s; their proxy
//! credentials are `identity::signed`'s (HS256 tokens carrying the id, owner, policy, a per-creation nonce and
//! the expiry at issue, so any replica holding the shared key verifies one at once).
//!
//! The store is the shared revocation list and the record of renewals; each replica keeps it in memory and
//! re-reads it when another process has written (SQLite's `data_version`, PostgreSQL's notifications). See
//! docs/src/control-plane.md.

pub(crate) mod access;
mod backend;
mod fields;
pub(crate) mod jails;
mod judge;
mod pg_store;
mod policy;
mod sources;
pub(crate) mod store;
pub(crate) mod store_file;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use secrecy::SecretString;

use crate::identity::signed::TokenSigner;
use crate::names::SandboxId;
use backend::Backend;
use fields::{check_labels, check_user};
use store::{SandboxRow, Store, StoreError};

/// What the admin API asks for.
#[derive(Debug, Clone, Default)]
pub struct NewSandbox {
    /// Wanted id; generated when `None`.
    pub id: Option<String>,
    /// Owning user.
    pub user: String,
    /// Policy name.
    pub policy: String,
    /// Lifetime; `control.default_ttl` when `None`.
    pub ttl: Option<Duration>,
    /// Free-form labels.
    pub labels: BTreeMap<String, String>,
    /// Source ranges that identify it without a credential (a VM or container known by address).
    pub source_cidrs: Vec<ipnet::IpNet>,
    /// Its own policy (a JSON document narrowing `policy`), validated by the caller.
    pub inline_policy: Option<Arc<str>>,
}

/// The policy of a run-time sandbox as its record says now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PolicyOf {
    /// A policy of the file: the one it runs under, or the base its own policy narrows.
    pub(crate) name: String,
    /// Its own policy (a JSON document), if it has one.
    pub(crate) inline: Option<Arc<str>>,
}

/// Why a control-plane call failed.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// The request is wrong; `field` names what.
    #[error("{field}: {message}")]
    Invalid {
        /// The offending field.
        field: &'static str,
        /// What is wrong and what would be right.
        message: String,
    },
    /// The id is taken by a live sandbox.
    #[error("a sandbox {0:?} already exists; choose another id or revoke it first")]
    Exists(String),
    /// A source range is another sandbox's already.
    #[error("source_cidrs: {mine} overlaps {theirs} of sandbox {other:?}; an address identifies one sandbox only")]
    Overlap {
        /// The range asked for.
        mine: ipnet::IpNet,
        /// The range it meets.
        theirs: ipnet::IpNet,
        /// Whose that is.
        other: String,
    },
    /// No such (live) sandbox.
    #[error("no sandbox {0:?}")]
    NotFound(String),
    /// A sandbox of the configuration file, which only the file can change.
    #[error("sandbox {0:?} is declared in the configuration file; change it there and reload")]
    Declared(String),
    /// The store failed.
    #[error("the sandbox store failed: {0}")]
    Store(String),
    /// The shared store cannot be reached now; nothing was changed. Try again later.
    #[error("the sandbox store is unavailable, so nothing was changed; try again later: {0}")]
    Unavailable(String),
    /// What the sandbox needs besides its record (its CA) could not be made; nothing was stored.
    #[error("cannot load or create the sandbox's CA: {0}")]
    Ca(String),
    /// A renewal that would end the sandbox sooner than it ends now; nothing was changed.
    #[error(
        "sandbox {id:?} expires at {}, later than this renewal would ({}): a renewal never shortens a sandbox; \
         ask for a longer ttl, or revoke the sandbox to end it now",
        crate::rfc3339::unix_seconds(*.expires),
        crate::rfc3339::unix_seconds(*.asked)
    )]
    Shorter {
        /// The sandbox.
        id: String,
        /// When it expires now (Unix seconds).
        expires: i64,
        /// When the renewal would have it expire.
        asked: i64,
    },
}

impl From<StoreError> for ControlError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Exists(id) => ControlError::Exists(id),
            StoreError::NotFound(id) => ControlError::NotFound(id),
            StoreError::Overlap(mine, theirs, other) => ControlError::Overlap { mine, theirs, other },
            StoreError::Db(m) => ControlError::Store(m),
            StoreError::Unavailable(m) => ControlError::Unavailable(m),
        }
    }
}

/// Lifetime bounds, from `control:`.
#[derive(Debug, Clone, Copy)]
pub struct Ttl {
    /// When none is asked for.
    pub default: Duration,
    /// The most that may be asked for.
    pub max: Duration,
}

/// Run-time sandboxes: store, in-memory view and credential signer.
pub struct Control {
    store: Backend,
    view: RwLock<HashMap<SandboxId, SandboxRow>>,
    signer: TokenSigner,
    /// What sandboxes asked for from inside, and the grants made of it (this replica's).
    pub(crate) access: access::AccessBook,
}

impl Control {
    /// Open the store (`None`: in memory) and load what it holds. `key` signs credentials; `None` makes a
    /// random key that dies with this process.
    pub fn open(store: Option<&Path>, key: Option<SecretString>) -> Result<Control, String> {
        let store = match store {
            Some(p) => Store::open(p),
            None => Store::in_memory(),
        }
        .map_err(|e| e.to_string())?;
        let control = Control::with(Backend::Sqlite(store), key)?;
        control.reload_view().map_err(|e| e.to_string())?;
        Ok(control)
    }

    /// Use the PostgreSQL store `db`, shared with other replicas, and load what it holds.
    pub(crate) async fn open_shared(db: Arc<crate::pg::Db>, key: Option<SecretString>) -> Result<Control, String> {
        let control = Control::with(Backend::Postgres(pg_store::PgStore::new(db)), key)?;
        control.resync().await.map_err(|e| e.to_string())?;
        Ok(control)
    }

    fn with(store: Backend, key: Option<SecretString>) -> Result<Control, String> {
        let key = match key {
            Some(k) => k,
            None => SecretString::from(crate::secret_file::random_hex(32)?),
        };
        Ok(Control {
            store,
            view: RwLock::new(HashMap::new()),
            signer: TokenSigner::new(&key)?,
            access: access::AccessBook::default(),
        })
    }

    /// Whether the store is shared through PostgreSQL (whose writes are announced, not polled).
    pub(crate) fn is_shared(&self) -> bool {
        self.store.shared().is_some()
    }

    /// Re-read every record from the shared store (after a missed announcement). Async; PostgreSQL only.
    pub(crate) async fn resync(&self) -> Result<(), ControlError> {
        let Some(pg) = self.store.shared() else {
            return Ok(());
        };
        let all = pg.all().await.map_err(StoreError::from)?;
        let map = all.into_iter().map(|r| (r.id.clone(), r)).collect();
        *self.view.write().unwrap_or_else(|p| p.into_inner()) = map;
        Ok(())
    }

    /// Re-read one record from the shared store (it was announced as changed, or a credential names a sandbox
    /// this replica has not heard of yet). Async; PostgreSQL only. True if the sandbox is known afterwards.
    pub(crate) async fn learn(&self, id: &SandboxId) -> Result<bool, ControlError> {
        let Some(pg) = self.store.shared() else {
            return Ok(self.get(id).is_some());
        };
        let record = pg.get(id).await.map_err(StoreError::from)?;
        let mut view = self.view.write().unwrap_or_else(|p| p.into_inner());
        Ok(match record {
            Some(r) => {
                view.insert(r.id.clone(), r);
                true
            }
            None => {
                view.remove(id);
                false
            }
        })
    }

    /// Where the store is, for messages.
    pub(crate) fn location(&self) -> String {
        self.store.location()
    }

    fn reload_view(&self) -> Result<(), ControlError> {
        let all = self.store.all()?;
        let map = all.into_iter().map(|r| (r.id.clone(), r)).collect();
        *self.view.write().unwrap_or_else(|p| p.into_inner()) = map;
        Ok(())
    }

    fn remember(&self, record: &SandboxRow) {
        self.view
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(record.id.clone(), record.clone());
    }

    /// Re-read the store if another process wrote to it. Blocking (SQLite); true if anything was re-read.
    pub(crate) fn refresh(&self) -> Result<bool, ControlError> {
        if self.store.changed_elsewhere()? {
            self.reload_view()?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Create a sandbox and its first credential. `declared` tells whether the configuration file has
    /// this id; `policy_known` whether the policy exists; `prepare` makes what the sandbox needs besides its
    /// record (its CA) before the record is stored, so a failure there leaves nothing behind. Blocking.
    pub fn create(
        &self,
        new: NewSandbox,
        ttl: Ttl,
        policy_known: impl Fn(&str) -> bool,
        declared: impl Fn(&str) -> bool,
        prepare: impl FnOnce(&SandboxRow) -> Result<(), ControlError>,
        now: i64,
    ) -> Result<(SandboxRow, String), ControlError> {
        let id = match new.id {
            Some(id) => SandboxId::parse(&id).map_err(|e| invalid("id", e.to_string()))?,
            None => SandboxId::parse(&format!(
                "sb-{}",
                crate::secret_file::random_hex(8).map_err(ControlError::Store)?
            ))
            .map_err(|e| invalid("id", e.to_string()))?,
        };
        if declared(id.as_str()) {
            return Err(ControlError::Exists(id.to_string()));
        }
        check_user(&new.user)?;
        if !policy_known(&new.policy) {
            return Err(invalid("policy", format!("there is no policy {:?}", new.policy)));
        }
        check_labels(&new.labels)?;
        let life = lifetime(new.ttl, ttl)?;
        let record = SandboxRow {
            id,
            nonce: crate::secret_file::random_hex(12).map_err(ControlError::Store)?,
            user: new.user,
            policy: new.policy,
            labels: new.labels,
            created: now,
            expires: now.saturating_add(life),
            revoked: None,
            source_cidrs: new.source_cidrs,
            inline_policy: new.inline_policy,
        };
        if self.live(&record.id, now).is_ok() {
            return Err(ControlError::Exists(record.id.to_string()));
        }
        // All or nothing: what the sandbox needs first, then its record.
        prepare(&record)?;
        self.store.insert(&record, now)?;
        self.remember(&record);
        let credential = self.mint(&record, now)?;
        Ok((record, credential))
    }

    fn mint(&self, r: &SandboxRow, now: i64) -> Result<String, ControlError> {
        self.signer
            .mint(r.id.as_str(), &r.nonce, &r.user, &r.policy, now, r.expires)
            .map_err(ControlError::Store)
    }

    /// A further credential for a live sandbox (e.g. for `cordon sandbox env`). Blocking.
    pub(crate) fn issue(&self, id: &SandboxId, now: i64) -> Result<(SandboxRow, String), ControlError> {
        let record = self.live(id, now)?;
        let credential = self.mint(&record, now)?;
        Ok((record, credential))
    }

    /// Extend a live sandbox to `now + ttl`. A renewal never shortens a sandbox (so no credential ever outlives
    /// its record): one that would is refused as [`ControlError::Shorter`], not answered as if it had renewed.
    /// Blocking.
    pub(crate) fn renew(
        &self,
        id: &SandboxId,
        ttl: Option<Duration>,
        bounds: Ttl,
        now: i64,
    ) -> Result<SandboxRow, ControlError> {
        let current = self.live(id, now)?;
        let life = lifetime(ttl, bounds)?;
        let asked = now.saturating_add(life);
        if asked < current.expires {
            return Err(ControlError::Shorter {
                id: id.to_string(),
                expires: current.expires,
                asked,
            });
        }
        let record = self.store.renew(id, asked, now)?;
        self.remember(&record);
        Ok(record)
    }

    /// Revoke the sandbox `id` names, for a caller that holds the id as text (the library's public entry):
    /// text that is no sandbox id names no sandbox ([`ControlError::NotFound`]). Blocking.
    pub fn revoke(&self, id: &str, now: i64) -> Result<SandboxRow, ControlError> {
        let sandbox = SandboxId::parse(id).map_err(|_| ControlError::NotFound(id.to_string()))?;
        self.revoke_sandbox(&sandbox, now)
    }

    /// Revoke: every credential of this sandbox is refused from now on. Blocking.
    pub(crate) fn revoke_sandbox(&self, id: &SandboxId, now: i64) -> Result<SandboxRow, ControlError> {
        let record = self.store.revoke(id, now)?;
        self.remember(&record);
        Ok(record)
    }

    fn live(&self, id: &SandboxId, now: i64) -> Result<SandboxRow, ControlError> {
        // The store, not the view: another replica may have revoked it a moment ago.
        match self.store.get(id)? {
            Some(r) if r.revoked.is_none() && r.expires > now => Ok(r),
            _ => Err(ControlError::NotFound(id.to_string())),
        }
    }

    /// The record of `id` as this replica knows it.
    pub(crate) fn get(&self, id: &SandboxId) -> Option<SandboxRow> {
        self.view.read().unwrap_or_else(|p| p.into_inner()).get(id).cloned()
    }

    /// Every record this replica knows, by id.
    pub(crate) fn list(&self) -> Vec<SandboxRow> {
        let mut all: Vec<SandboxRow> = self
            .view
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        all.sort_by(|a, b| a.id.cmp(&b.id));
        all
    }

    /// Sandboxes neither revoked nor expired.
    pub fn live_count(&self, now: i64) -> u64 {
        let view = self.view.read().unwrap_or_else(|p| p.into_inner());
        view.values().filter(|r| r.revoked.is_none() && r.expires > now).count() as u64
    }

    /// Forget records that expired before `before` (their credentials are all expired too). Blocking.
    pub(crate) fn purge(&self, before: i64) -> Result<usize, ControlError> {
        let n = self.store.purge(before)?;
        if n > 0 {
            self.reload_view()?;
        }
        Ok(n)
    }
}

fn invalid(field: &'static str, message: impl Into<String>) -> ControlError {
    ControlError::Invalid {
        field,
        message: message.into(),
    }
}

fn lifetime(ttl: Option<Duration>, bounds: Ttl) -> Result<i64, ControlError> {
    let ttl = ttl.unwrap_or(bounds.default);
    if ttl < Duration::from_secs(1) {
        return Err(invalid("ttl", "must be at least 1s"));
    }
    if ttl > bounds.max {
        return Err(invalid(
            "ttl",
            format!(
                "{} is longer than control.max_ttl ({})",
                humantime::format_duration(ttl),
                humantime::format_duration(bounds.max)
            ),
        ));
    }
    Ok(i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX))
}

/// Unix seconds now.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
