//! Throttling of failed proxy authentications, two ways: per (source address, claimed sandbox id), so that
//! one sandbox guessing or misconfigured behind a NAT does not lock out its neighbours; and per source
//! address, at a higher ceiling, so that guessing across many ids is bounded too.
//!
//! governor has no way to look at a key without consuming a cell, so when a failure is refused the
//! instant it would conform again is kept in a "blocked until" map; [`Auth::blocked`] reads only that.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use governor::clock::Clock;

use super::rate::{Keyed, describe, until, whole_seconds};
use super::{LimitRefusal, Rate};

use crate::locks::Unpoisoned;

/// What a block covers: one claimed id from one address, or everything from the address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Blocked {
    /// Attempts from this address naming this sandbox id (`None`: naming none that could be one).
    Claim(IpAddr, Option<String>),
    /// Every attempt from this address.
    Source(IpAddr),
}

/// The failure limiters and what they currently refuse.
pub(super) struct Auth<C: Clock> {
    /// Failed authentications per (source address, claimed id); `None` = never throttled.
    per_claim: Option<Keyed<(IpAddr, Option<String>), C>>,
    /// Failed authentications per source address, whatever the claim; `None` = no ceiling.
    per_source: Option<Keyed<IpAddr, C>>,
    /// What the limiters refused, and until when.
    blocked: Mutex<HashMap<Blocked, C::Instant>>,
}

impl<C: Clock + Clone> Auth<C> {
    /// Throttles allowing `per_claim` failures per (address, claimed id) and `per_source` per address.
    pub(super) fn new(per_claim: Option<Rate>, per_source: Option<Rate>, clock: C) -> Self {
        Self {
            per_claim: per_claim.map(|rate| Keyed::new(rate, clock.clone())),
            per_source: per_source.map(|rate| Keyed::new(rate, clock)),
            blocked: Mutex::new(HashMap::new()),
        }
    }
}

impl<C: Clock> Auth<C> {
    /// Lock the blocked map; a poisoned lock is still usable (entries are plain instants).
    fn lock(&self) -> MutexGuard<'_, HashMap<Blocked, C::Instant>> {
        self.blocked.lock().unpoisoned()
    }

    /// Count one failure from `source` claiming sandbox `claim`; refuse (and block) when the address's
    /// ceiling or the claim's rate is exceeded. A claim that is no sandbox id counts as no claim, so the
    /// keys stay small whatever a client sends.
    pub(super) fn failure(&self, source: IpAddr, claim: Option<&str>) -> Result<(), LimitRefusal> {
        let claim = claim_key(claim);
        if let Some(limiter) = &self.per_source
            && let Err(denied) = limiter.check(&source)
        {
            self.block(Blocked::Source(source), denied.until);
            return Err(refusal(&Blocked::Source(source), limiter.rate(), denied.retry_after));
        }
        if let Some(limiter) = &self.per_claim {
            let key = (source, claim);
            if let Err(denied) = limiter.check(&key) {
                let what = Blocked::Claim(key.0, key.1);
                self.block(what.clone(), denied.until);
                return Err(refusal(&what, limiter.rate(), denied.retry_after));
            }
        }
        Ok(())
    }

    fn block(&self, what: Blocked, until_instant: C::Instant) {
        let mut blocked = self.lock();
        let entry = blocked.entry(what).or_insert(until_instant);
        *entry = (*entry).max(until_instant);
    }

    /// The refusal for `source` claiming `claim` if either is blocked at `now`; counts nothing.
    pub(super) fn blocked(&self, source: IpAddr, claim: Option<&str>, now: C::Instant) -> Option<LimitRefusal> {
        let blocked = self.lock();
        // Nothing blocked, the usual case on every request: no key is built.
        if blocked.is_empty() {
            return None;
        }
        let active = |what: &Blocked| blocked.get(what).copied().filter(|u| *u > now);
        let (what, rate, until_instant) = match &self.per_source {
            Some(l) if let Some(u) = active(&Blocked::Source(source)) => (Blocked::Source(source), l.rate(), u),
            _ => {
                let l = self.per_claim.as_ref()?;
                let what = Blocked::Claim(source, claim_key(claim));
                let u = active(&what)?;
                (what, l.rate(), u)
            }
        };
        drop(blocked);
        Some(refusal(&what, rate, whole_seconds(until(now, until_instant))))
    }

    /// Forget blocks that are over and failure states that are back to fresh.
    pub(super) fn housekeep(&self, now: C::Instant) {
        if let Some(l) = &self.per_claim {
            l.housekeep();
        }
        if let Some(l) = &self.per_source {
            l.housekeep();
        }
        let mut blocked = self.lock();
        blocked.retain(|_, until_instant| *until_instant > now);
        blocked.shrink_to_fit();
    }

    /// Number of keys tracked by the limiters together, and by the blocked map.
    #[cfg(test)]
    pub(super) fn len(&self) -> (usize, usize) {
        let states = self.per_claim.as_ref().map_or(0, Keyed::len) + self.per_source.as_ref().map_or(0, Keyed::len);
        (states, self.lock().len())
    }
}

/// What a failure's claim is keyed by: a sandbox id as sent, or nothing when what was sent cannot be one
/// (longer than 64 bytes, or other characters), so a client cannot grow the keys at will.
fn claim_key(claim: Option<&str>) -> Option<String> {
    claim
        .filter(|id| {
            !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        })
        .map(str::to_owned)
}

/// The `auth_throttled` refusal for what is blocked.
fn refusal(what: &Blocked, rate: Rate, retry_after: Duration) -> LimitRefusal {
    let (whose, setting) = match what {
        Blocked::Claim(source, Some(id)) => (format!("for sandbox {id:?} from {source}"), "limits.auth_failures"),
        Blocked::Claim(source, None) => (format!("without a sandbox id from {source}"), "limits.auth_failures"),
        Blocked::Source(source) => (format!("from {source}"), "limits.per_source.auth_failures"),
    };
    LimitRefusal {
        reason: LimitRefusal::AUTH_THROTTLED,
        retry_after,
        message: format!(
            "too many failed proxy authentications {whose} (over {}, {setting}); wait {} s before trying again",
            describe(rate, "failures"),
            retry_after.as_secs(),
        ),
    }
}
