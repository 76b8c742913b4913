//! Secrets read from the file vault or OpenBao, kept between requests (`vault.cache_ttl`): a credentialed request
//! neither decrypts the vault nor asks OpenBao each time, and an outage of either does not fail requests while
//! the value read last is younger than the TTL. Past half the TTL, a value is served and read again in the
//! background (refresh-ahead); past the whole TTL it is read before it is used, and a failure then fails the
//! request: no value older than the TTL is ever used.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use secrecy::SecretString;

/// At most this many stored secrets are kept (each credential names one or a few).
const CAPACITY: u64 = 100_000;

/// What the cache has for a key now.
pub(crate) enum Cached {
    /// Young enough: use it.
    Fresh(SecretString),
    /// Past half its TTL: use it, and read it again in the background (this caller was chosen to).
    RefreshAhead(SecretString),
    /// Nothing usable: read it now.
    Miss,
}

struct CachedSecret {
    value: SecretString,
    read: Instant,
    /// A background read is under way (only one at a time per key).
    refreshing: AtomicBool,
}

/// The cache of stored secrets, by the reference's text. moka keeps the entries and drops each one a TTL after
/// it was read; the ages that decide are measured from the `now` a caller passes, so a value is never used at
/// or past its TTL whenever moka gets to dropping it.
pub(crate) struct StoredCache {
    ttl: Duration,
    entries: moka::sync::Cache<String, Arc<CachedSecret>>,
}

impl StoredCache {
    /// A cache keeping values `ttl`.
    pub(crate) fn new(ttl: Duration) -> StoredCache {
        StoredCache {
            ttl,
            entries: moka::sync::Cache::builder()
                .max_capacity(CAPACITY)
                .time_to_live(ttl.max(Duration::from_millis(1)))
                .build(),
        }
    }

    /// What to do for `key` at `now`.
    pub(crate) fn lookup(&self, key: &str, now: Instant) -> Cached {
        let Some(entry) = self.entries.get(key) else {
            return Cached::Miss;
        };
        let age = now.saturating_duration_since(entry.read);
        if age >= self.ttl {
            return Cached::Miss;
        }
        if age >= self.ttl / 2 && !entry.refreshing.swap(true, Ordering::AcqRel) {
            return Cached::RefreshAhead(entry.value.clone());
        }
        Cached::Fresh(entry.value.clone())
    }

    /// `value` was read for `key` at `now`.
    pub(crate) fn put(&self, key: &str, value: SecretString, now: Instant) {
        self.entries.insert(
            key.to_string(),
            Arc::new(CachedSecret {
                value,
                read: now,
                refreshing: AtomicBool::new(false),
            }),
        );
    }

    /// A background read for `key` failed: the value stays until its TTL, and a later request tries again.
    pub(crate) fn refresh_failed(&self, key: &str) {
        if let Some(entry) = self.entries.get(key) {
            entry.refreshing.store(false, Ordering::Release);
        }
    }
}

#[cfg(test)]
#[path = "stored_cache_tests.rs"]
mod tests;
