//! A cache of short-lived tokens per key, refreshed ahead of expiry with one fetch at a time per key, and
//! never handing out a token that has expired.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use super::{SourceError, Token};

/// A token whose issuer gave no expiry is treated as expiring this long after it was fetched.
pub(crate) const DEFAULT_LIFETIME: Duration = Duration::from_secs(5 * 60);

/// After a failed refresh ahead of expiry, the still-valid token is served without retrying for
/// `min(refresh_ahead / 4, this)`, so that a down issuer is not asked again on every request.
const MAX_REFRESH_RETRY: Duration = Duration::from_secs(5);

/// The last failed fetch of a key.
struct Failure {
    error: SourceError,
    at: Instant,
}

/// A cached token with its effective expiry.
struct Entry {
    token: Arc<Token>,
    expires_at: SystemTime,
}

/// One key's state.
#[derive(Default)]
struct Slot {
    /// The current token (read without waiting for a refresh in progress).
    current: Mutex<Option<Entry>>,
    /// Held while fetching: one refresh at a time per key. Holds the outcome of the last failed attempt.
    refresh: tokio::sync::Mutex<Option<Failure>>,
    /// Counts fetch attempts, so a waiter can tell that someone else just tried.
    attempts: AtomicU64,
}

impl Slot {
    fn current(&self) -> MutexGuard<'_, Option<Entry>> {
        // A panic while holding this lock cannot leave an Entry half-written; keep going.
        self.current.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The cached token if it is still valid at `now`, and whether it is due for refresh.
    fn valid(&self, now: SystemTime, refresh_ahead: Duration) -> Option<(Arc<Token>, bool)> {
        let current = self.current();
        let entry = current.as_ref()?;
        if now >= entry.expires_at {
            return None;
        }
        let due = now.checked_add(refresh_ahead).is_none_or(|t| t >= entry.expires_at);
        Some((entry.token.clone(), due))
    }
}

/// Tokens per key (e.g. "credential-name|scope|sandbox"), kept until shortly before they expire, refreshed
/// ahead of expiry, one refresh at a time per key.
pub(crate) struct TokenCache {
    refresh_ahead: Duration,
    slots: moka::sync::Cache<String, Arc<Slot>>,
    fetches: AtomicU64,
}

impl TokenCache {
    /// A cache refreshing tokens `refresh_ahead` before they expire, holding at most `capacity` keys.
    pub(crate) fn new(refresh_ahead: Duration, capacity: u64) -> TokenCache {
        TokenCache {
            refresh_ahead,
            slots: moka::sync::Cache::new(capacity),
            fetches: AtomicU64::new(0),
        }
    }

    /// Forget `key`'s token (e.g. when its sandbox ends, or an upstream rejected the token as revoked).
    #[cfg(test)]
    pub(crate) fn invalidate(&self, key: &str) {
        self.slots.invalidate(key);
    }

    fn retry_after_failure(&self) -> Duration {
        (self.refresh_ahead / 4).min(MAX_REFRESH_RETRY)
    }

    /// How many fetches have been started.
    #[cfg(test)]
    pub(crate) fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    /// A valid token for `key`, fetching with `fetch` when there is none or it is within `refresh_ahead` of
    /// expiry. If the refresh fails but the cached token is still valid (not yet expired), return the cached
    /// one; if it has expired (or there is none), return the error — never an expired token.
    pub(crate) async fn get<F, Fut>(&self, key: &str, fetch: F) -> Result<Arc<Token>, SourceError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Token, SourceError>>,
    {
        let slot = self.slots.get_with_by_ref(key, || Arc::new(Slot::default()));

        let seen_attempts = slot.attempts.load(Ordering::Acquire);
        let mut last_failure = match slot.valid(SystemTime::now(), self.refresh_ahead) {
            Some((token, false)) => return Ok(token),
            Some((token, true)) => match slot.refresh.try_lock() {
                // Someone else is refreshing: the cached token is still valid, use it without waiting.
                Err(_) => return Ok(token),
                // A refresh failed moments ago: do not ask the issuer again yet.
                Ok(guard)
                    if guard
                        .as_ref()
                        .is_some_and(|f| f.at.elapsed() < self.retry_after_failure()) =>
                {
                    return Ok(token);
                }
                Ok(guard) => guard,
            },
            None => {
                let guard = slot.refresh.lock().await;
                // Someone else fetched (or failed to) while we waited: share their outcome.
                if slot.attempts.load(Ordering::Acquire) != seen_attempts {
                    if let Some((token, _)) = slot.valid(SystemTime::now(), self.refresh_ahead) {
                        return Ok(token);
                    }
                    if let Some(failure) = guard.as_ref() {
                        return Err(failure.error.clone());
                    }
                }
                guard
            }
        };
        // Re-check under the lock: a refresh may have completed between our read and taking the lock.
        if let Some((token, false)) = slot.valid(SystemTime::now(), self.refresh_ahead) {
            return Ok(token);
        }

        self.fetches.fetch_add(1, Ordering::Relaxed);
        let outcome = fetch().await;
        slot.attempts.fetch_add(1, Ordering::Release);
        let now = SystemTime::now();
        let outcome = outcome.and_then(|token| {
            let expires_at = match token.expires_at {
                Some(at) => at,
                None => now.checked_add(DEFAULT_LIFETIME).unwrap_or(now),
            };
            // SECURITY: never hand out an expired token, even one the issuer has just sent (clock skew).
            if now >= expires_at {
                return Err(SourceError::InvalidResponse {
                    issuer: format!("for {key}"),
                    detail: "the new token has already expired (check the clocks)".to_string(),
                });
            }
            Ok(Entry {
                token: Arc::new(token),
                expires_at,
            })
        });
        match outcome {
            Ok(entry) => {
                let token = entry.token.clone();
                *slot.current() = Some(entry);
                *last_failure = None;
                Ok(token)
            }
            Err(err) => {
                tracing::warn!(key, error = %err, "token refresh failed");
                *last_failure = Some(Failure {
                    error: err.clone(),
                    at: Instant::now(),
                });
                // SECURITY: fall back to the cached token only while it has not expired.
                match slot.valid(SystemTime::now(), self.refresh_ahead) {
                    Some((token, _)) => Ok(token),
                    None => {
                        *slot.current() = None;
                        Err(err)
                    }
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
