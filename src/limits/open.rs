//! Counts of open connections and tunnels per sandbox and per user, with caps and RAII release.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::LimitRefusal;

use crate::locks::Unpoisoned;
use crate::names::SandboxId;

/// How long a caller refused by an open cap is told to wait: slots free up as soon as anything closes.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// The open counts; a key is present only while its count is above zero.
#[derive(Debug, Default)]
struct Table {
    /// Open connections and tunnels per sandbox.
    sandboxes: HashMap<SandboxId, u32>,
    /// Open connections and tunnels per user, over all of the user's sandboxes.
    users: HashMap<String, u32>,
}

/// Open counts shared between [`super::Limits`] and every live [`OpenGuard`].
#[derive(Debug, Default)]
pub(super) struct Open {
    /// The counts, behind one lock so that checking both caps and taking both slots is one step.
    table: Arc<Mutex<Table>>,
}

impl Open {
    /// Lock the table; a poisoned lock is still usable (the counts stay consistent per operation).
    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unpoisoned()
    }

    /// Take one slot of `sandbox` and of `user`, or refuse when either is at its cap (`None` = no cap).
    pub(super) fn open(
        &self,
        sandbox: &SandboxId,
        user: &str,
        sandbox_cap: Option<u32>,
        user_cap: Option<u32>,
    ) -> Result<OpenGuard, LimitRefusal> {
        let mut table = self.lock();
        let in_sandbox = table.sandboxes.get(sandbox).copied().unwrap_or(0);
        if let Some(cap) = sandbox_cap.filter(|cap| in_sandbox >= *cap) {
            return Err(LimitRefusal {
                reason: LimitRefusal::SANDBOX_OPEN_LIMIT,
                retry_after: RETRY_AFTER,
                message: format!(
                    "sandbox {sandbox} already has {cap} connections and tunnels open, the most allowed; \
                     close some first"
                ),
            });
        }
        let of_user = table.users.get(user).copied().unwrap_or(0);
        if let Some(cap) = user_cap.filter(|cap| of_user >= *cap) {
            return Err(LimitRefusal {
                reason: LimitRefusal::USER_OPEN_LIMIT,
                retry_after: RETRY_AFTER,
                message: format!(
                    "user {user} already has {cap} connections and tunnels open across their sandboxes, \
                     the most allowed; close some first"
                ),
            });
        }
        increment(&mut table.sandboxes, sandbox);
        increment(&mut table.users, user);
        drop(table);
        Ok(OpenGuard {
            table: Arc::clone(&self.table),
            sandbox: sandbox.clone(),
            user: user.to_owned(),
        })
    }

    /// Open counts of `sandbox` and of `user` now.
    #[cfg(test)]
    pub(super) fn counts(&self, sandbox: &SandboxId, user: &str) -> (u32, u32) {
        let table = self.lock();
        (
            table.sandboxes.get(sandbox).copied().unwrap_or(0),
            table.users.get(user).copied().unwrap_or(0),
        )
    }

    /// Drop zero counts (guards already remove them; this only guards against drift) and spare capacity.
    pub(super) fn housekeep(&self) {
        let mut table = self.lock();
        table.sandboxes.retain(|_, n| *n > 0);
        table.users.retain(|_, n| *n > 0);
        table.sandboxes.shrink_to_fit();
        table.users.shrink_to_fit();
    }

    /// Number of sandboxes and users with an entry.
    #[cfg(test)]
    pub(super) fn len(&self) -> (usize, usize) {
        let table = self.lock();
        (table.sandboxes.len(), table.users.len())
    }
}

/// Add one to `key`'s count, creating it at one.
fn increment<K, Q>(map: &mut HashMap<K, u32>, key: &Q)
where
    K: Borrow<Q> + Hash + Eq,
    Q: ToOwned<Owned = K> + Hash + Eq + ?Sized,
{
    if let Some(n) = map.get_mut(key) {
        *n = n.saturating_add(1);
    } else {
        map.insert(key.to_owned(), 1);
    }
}

/// Take one from `key`'s count, removing the key when it reaches zero.
fn decrement<K, Q>(map: &mut HashMap<K, u32>, key: &Q)
where
    K: Borrow<Q> + Hash + Eq,
    Q: Hash + Eq + ?Sized,
{
    if let Some(n) = map.get_mut(key) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            map.remove(key);
        }
    }
}

/// One open connection or tunnel, counted against its sandbox and user until this is dropped.
///
/// Dropping it releases one open slot of its sandbox and of its user. It holds only an `Arc` to the
/// shared counts, so it can move into any task and outlive the [`super::Limits`] that gave it out.
pub(crate) struct OpenGuard {
    /// The shared counts to give the slot back to.
    table: Arc<Mutex<Table>>,
    /// The sandbox the slot was taken from.
    sandbox: SandboxId,
    /// The user the slot was taken from.
    user: String,
}

impl OpenGuard {
    /// The sandbox this slot counts against.
    #[cfg(test)]
    pub(crate) fn sandbox(&self) -> &SandboxId {
        &self.sandbox
    }

    /// The user this slot counts against.
    #[cfg(test)]
    pub(crate) fn user(&self) -> &str {
        &self.user
    }
}

impl fmt::Debug for OpenGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenGuard")
            .field("sandbox", &self.sandbox)
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        let mut table = self.table.lock().unpoisoned();
        decrement(&mut table.sandboxes, &self.sandbox);
        decrement(&mut table.users, &self.user);
    }
}

#[cfg(test)]
#[path = "open_tests.rs"]
mod tests;
