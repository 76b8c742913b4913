//! Throttling of failed proxy authentications per source address.
//!
//! governor has no way to look at a key without consuming a cell, so when a failure is refused the
//! instant it would conform again is kept in a "blocked until" map; [`Auth::blocked`] reads only that.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use governor::clock::Clock;

use super::rate::{Keyed, describe, until, whole_seconds};
use super::{Rate, Refusal};

/// The failure limiter and the addresses it currently refuses.
pub(super) struct Auth<C: Clock> {
    /// Failed authentications per source address; `None` = never throttled.
    failures: Option<Keyed<IpAddr, C>>,
    /// Source addresses refused by `failures`, and until when.
    blocked: Mutex<HashMap<IpAddr, C::Instant>>,
}

impl<C: Clock> Auth<C> {
    /// A throttle allowing `rate` failures per source address (`None` = unlimited).
    pub(super) fn new(rate: Option<Rate>, clock: C) -> Self {
        Self {
            failures: rate.map(|rate| Keyed::new(rate, clock)),
            blocked: Mutex::new(HashMap::new()),
        }
    }

    /// Lock the blocked map; a poisoned lock is still usable (entries are plain instants).
    fn lock(&self) -> MutexGuard<'_, HashMap<IpAddr, C::Instant>> {
        self.blocked.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Count one failure from `source`; refuse (and block the address) when it is over the rate.
    pub(super) fn failure(&self, source: IpAddr) -> Result<(), Refusal> {
        let Some(failures) = &self.failures else {
            return Ok(());
        };
        match failures.check(&source) {
            Ok(()) => Ok(()),
            Err(denied) => {
                let mut blocked = self.lock();
                let entry = blocked.entry(source).or_insert(denied.until);
                *entry = (*entry).max(denied.until);
                drop(blocked);
                Err(refusal(source, failures.rate(), denied.retry_after))
            }
        }
    }

    /// The refusal for `source` if it is blocked at `now`; counts nothing.
    pub(super) fn blocked(&self, source: IpAddr, now: C::Instant) -> Option<Refusal> {
        let failures = self.failures.as_ref()?;
        let until_instant = *self.lock().get(&source)?;
        if until_instant <= now {
            return None;
        }
        Some(refusal(
            source,
            failures.rate(),
            whole_seconds(until(now, until_instant)),
        ))
    }

    /// Forget blocks that are over and failure states that are back to fresh.
    pub(super) fn housekeep(&self, now: C::Instant) {
        if let Some(failures) = &self.failures {
            failures.housekeep();
        }
        let mut blocked = self.lock();
        blocked.retain(|_, until_instant| *until_instant > now);
        blocked.shrink_to_fit();
    }

    /// Number of addresses tracked by the limiter and by the blocked map.
    #[cfg(test)]
    pub(super) fn len(&self) -> (usize, usize) {
        (self.failures.as_ref().map_or(0, Keyed::len), self.lock().len())
    }
}

/// The `auth_throttled` refusal for `source`.
fn refusal(source: IpAddr, rate: Rate, retry_after: Duration) -> Refusal {
    Refusal {
        reason: Refusal::AUTH_THROTTLED,
        retry_after,
        message: format!(
            "too many failed proxy authentications from {source} (over {}); wait {} s before trying again",
            describe(rate, "failures"),
            retry_after.as_secs(),
        ),
    }
}
