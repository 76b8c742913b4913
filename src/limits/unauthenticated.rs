//! Connections that have not authenticated yet, counted per source address: one address cannot hold every
//! connection slot of cordon with connections that never say who they are.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::locks::Unpoisoned;

/// The count of unauthenticated connections of each source address.
#[derive(Debug, Default)]
pub struct Unauthenticated {
    counts: Mutex<HashMap<IpAddr, usize>>,
}

/// One unauthenticated connection of an address; dropping it (when the connection authenticates or ends)
/// gives its place back.
#[derive(Debug)]
pub struct Waiting {
    owner: Arc<Unauthenticated>,
    source: IpAddr,
}

impl Unauthenticated {
    fn lock(&self) -> MutexGuard<'_, HashMap<IpAddr, usize>> {
        self.counts.lock().unpoisoned()
    }

    /// A place for one more unauthenticated connection from `source`, unless it has `cap` already.
    pub(crate) fn enter(self: &Arc<Self>, source: IpAddr, cap: usize) -> Option<Waiting> {
        let mut counts = self.lock();
        let count = counts.entry(source).or_default();
        if *count >= cap {
            return None;
        }
        *count += 1;
        Some(Waiting {
            owner: self.clone(),
            source,
        })
    }

    /// How many unauthenticated connections `source` has.
    #[cfg(test)]
    fn of(&self, source: IpAddr) -> usize {
        self.lock().get(&source).copied().unwrap_or(0)
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let mut counts = self.owner.lock();
        if let Some(count) = counts.get_mut(&self.source) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(&self.source);
            }
        }
    }
}

#[cfg(test)]
#[path = "unauthenticated_tests.rs"]
mod tests;
