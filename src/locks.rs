//! Locks a panic does not wedge: whoever takes a lock after a holder panicked gets what it left, since every
//! lock in cordon guards data that stays whole between its own statements (counters, tables, queues), and a
//! proxy that stopped answering because one request panicked would be worse than the panic.

use std::sync::{LockResult, PoisonError};

/// A lock's guard whatever a holder that panicked left behind: `mutex.lock().unpoisoned()`,
/// `rwlock.read().unpoisoned()`, `rwlock.write().unpoisoned()`.
pub(crate) trait Unpoisoned<G> {
    /// The guard, poisoned or not.
    fn unpoisoned(self) -> G;
}

impl<G> Unpoisoned<G> for LockResult<G> {
    fn unpoisoned(self) -> G {
        self.unwrap_or_else(PoisonError::into_inner)
    }
}
