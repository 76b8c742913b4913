//! Keyed GCRA rate limiters (governor) behind a small wrapper that turns a refusal into a wait.

use std::hash::Hash;
use std::time::Duration;

use governor::clock::{Clock, Reference};
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};

use super::{LimitRefusal, Rate};

/// The governor limiter type used for every keyed rate: default (sharded) store, no middleware.
type Governor<K, C> = RateLimiter<K, DefaultKeyedStateStore<K>, C, NoOpMiddleware<<C as Clock>::Instant>>;

/// Why a keyed limiter refused a cell: how long to wait, and the instant the next cell conforms.
#[derive(Debug, Clone, Copy)]
pub(super) struct Denied<I> {
    /// Time from now until the next cell conforms, rounded up to whole seconds, at least 1 s.
    pub(super) retry_after: Duration,
    /// The instant (of the limiter's clock) at which the next cell conforms.
    pub(super) until: I,
}

impl<I> Denied<I> {
    /// The refusal to report: `reason` and `message`, with this wait as `retry_after`.
    pub(super) fn refusal(&self, reason: crate::reason::Reason, message: String) -> LimitRefusal {
        LimitRefusal {
            reason,
            retry_after: self.retry_after,
            message,
        }
    }
}

/// One rate applied separately to every key (sandbox, user, (sandbox, host), source address).
pub(super) struct Keyed<K, C>
where
    K: Hash + Eq + Clone,
    C: Clock,
{
    /// The configured rate, kept for messages.
    rate: Rate,
    /// governor's keyed GCRA limiter.
    limiter: Governor<K, C>,
}

impl<K, C> Keyed<K, C>
where
    K: Hash + Eq + Clone,
    C: Clock,
{
    /// A limiter allowing `rate.per_second` cells per second per key, `rate.burst` at once.
    pub(super) fn new(rate: Rate, clock: C) -> Self {
        let quota = Quota::per_second(rate.per_second).allow_burst(rate.burst);
        Self {
            rate,
            limiter: RateLimiter::new(quota, DefaultKeyedStateStore::default(), clock),
        }
    }

    /// The configured rate.
    pub(super) fn rate(&self) -> Rate {
        self.rate
    }

    /// Let one cell of `key` through (consuming it), or say how long until one would pass.
    ///
    /// A refused cell consumes nothing (GCRA only updates the state on success).
    pub(super) fn check(&self, key: &K) -> Result<(), Denied<C::Instant>> {
        match self.limiter.check_key(key) {
            Ok(()) => Ok(()),
            Err(not_until) => {
                let wait = not_until.wait_time_from(self.limiter.clock().now());
                Err(Denied {
                    retry_after: whole_seconds(wait),
                    until: not_until.earliest_possible(),
                })
            }
        }
    }

    /// Forget keys whose state is indistinguishable from a fresh one, and give back spare capacity.
    pub(super) fn housekeep(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }

    /// Number of keys currently tracked.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.limiter.len()
    }
}

/// `wait` rounded up to whole seconds, at least one second: what a `Retry-After` header can carry.
pub(super) fn whole_seconds(wait: Duration) -> Duration {
    let secs = if wait.subsec_nanos() > 0 {
        wait.as_secs().saturating_add(1)
    } else {
        wait.as_secs()
    };
    Duration::from_secs(secs.max(1))
}

/// Time from `now` until `until` (zero when `until` has passed).
pub(super) fn until<I: Reference>(now: I, until: I) -> Duration {
    until.duration_since(now).into()
}

/// A rate in words: "50 requests per second (burst 100)", "1 request per second (burst 5)".
pub(super) fn describe(rate: Rate, what: &str) -> String {
    let what = if rate.per_second.get() == 1 {
        what.strip_suffix('s').unwrap_or(what)
    } else {
        what
    };
    format!("{} {what} per second (burst {})", rate.per_second, rate.burst)
}

#[cfg(test)]
#[path = "rate_tests.rs"]
mod tests;
