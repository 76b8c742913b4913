//! A cache of short-lived tokens per key, refreshed ahead of expiry with one fetch at a time per key, and
//! never handing out a token that has expired.
//!
//! The keeping is moka's: each token is evicted at its own expiry (per-entry expiry), the cache is bounded,
//! and callers that miss the same key at once share one fetch and its outcome (`try_get_with`). What moka does
//! not do is layered on: a token within `refresh_ahead` of expiry is refreshed by one caller while the others
//! go on using it, and after a failed refresh the still-valid token is served a while before the issuer is
//! asked again.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use super::{IssuerError, Token};

use crate::locks::Unpoisoned;

/// A token whose issuer gave no expiry is treated as expiring this long after it was fetched.
pub(crate) const DEFAULT_LIFETIME: Duration = Duration::from_secs(5 * 60);

/// After a failed refresh ahead of expiry, the still-valid token is served without retrying for
/// `min(refresh_ahead / 4, this)`, so that a down issuer is not asked again on every request.
const MAX_REFRESH_RETRY: Duration = Duration::from_secs(5);

/// A cached token with its effective expiry and the state of its refresh.
struct CachedToken {
    token: Arc<Token>,
    expires_at: SystemTime,
    /// A caller is refreshing this token: the others use it meanwhile (one refresh at a time per key).
    refreshing: AtomicBool,
    /// When the last refresh of this token failed.
    failed_at: Mutex<Option<Instant>>,
}

impl CachedToken {
    /// The entry for a token the issuer just sent, or the error when it has already expired.
    fn new(key: &str, token: Token) -> Result<CachedToken, IssuerError> {
        let now = SystemTime::now();
        let expires_at = match token.expires_at {
            Some(at) => at,
            None => now.checked_add(DEFAULT_LIFETIME).unwrap_or(now),
        };
        // SECURITY: never hand out an expired token, even one the issuer has just sent (clock skew).
        if now >= expires_at {
            return Err(IssuerError::InvalidResponse {
                issuer: format!("for {key}"),
                detail: "the new token has already expired (check the clocks)".to_string(),
            });
        }
        Ok(CachedToken {
            token: Arc::new(token),
            expires_at,
            refreshing: AtomicBool::new(false),
            failed_at: Mutex::new(None),
        })
    }

    /// Whether the token is still valid at `now`.
    fn valid(&self, now: SystemTime) -> bool {
        now < self.expires_at
    }

    /// Whether the token is within `refresh_ahead` of its expiry at `now`.
    fn due(&self, now: SystemTime, refresh_ahead: Duration) -> bool {
        now.checked_add(refresh_ahead).is_none_or(|t| t >= self.expires_at)
    }

    fn failed_within(&self, wait: Duration) -> bool {
        self.failed_at.lock().unpoisoned().is_some_and(|at| at.elapsed() < wait)
    }
}

/// moka evicts each entry when its token expires.
struct UntilExpiry;

impl moka::Expiry<String, Arc<CachedToken>> for UntilExpiry {
    fn expire_after_create(&self, _key: &String, entry: &Arc<CachedToken>, _now: Instant) -> Option<Duration> {
        Some(
            entry
                .expires_at
                .duration_since(SystemTime::now())
                .unwrap_or(Duration::ZERO),
        )
    }

    fn expire_after_update(
        &self,
        key: &String,
        entry: &Arc<CachedToken>,
        now: Instant,
        _left: Option<Duration>,
    ) -> Option<Duration> {
        self.expire_after_create(key, entry, now)
    }
}

/// Tokens per key (e.g. "credential-name|scope|sandbox"), kept until they expire, refreshed ahead of expiry,
/// one fetch at a time per key.
pub(crate) struct TokenCache {
    refresh_ahead: Duration,
    entries: moka::future::Cache<String, Arc<CachedToken>>,
    fetches: AtomicU64,
}

impl TokenCache {
    /// A cache refreshing tokens `refresh_ahead` before they expire, holding at most `capacity` keys.
    pub(crate) fn new(refresh_ahead: Duration, capacity: u64) -> TokenCache {
        TokenCache {
            refresh_ahead,
            entries: moka::future::Cache::builder()
                .max_capacity(capacity)
                .expire_after(UntilExpiry)
                .build(),
            fetches: AtomicU64::new(0),
        }
    }

    /// Forget `key`'s token (e.g. when its sandbox ends, or a new refresh token was seeded).
    pub(crate) async fn invalidate(&self, key: &str) {
        self.entries.invalidate(key).await;
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
    pub(crate) async fn get<F, Fut>(&self, key: &str, fetch: F) -> Result<Arc<Token>, IssuerError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Token, IssuerError>>,
    {
        let cached = self.entries.get(key).await;
        let Some(entry) = cached.filter(|e| e.valid(SystemTime::now())) else {
            // Nothing valid: the callers that miss at once share one fetch and its outcome.
            let fetched = self
                .entries
                .try_get_with_by_ref(key, async {
                    self.fetches.fetch_add(1, Ordering::Relaxed);
                    let outcome = fetch().await.and_then(|token| CachedToken::new(key, token));
                    if let Err(err) = &outcome {
                        tracing::warn!(key, error = %err, "token fetch failed");
                    }
                    outcome.map(Arc::new)
                })
                .await;
            return match fetched {
                // A token shared from another caller's fetch is checked like any other.
                Ok(entry) if entry.valid(SystemTime::now()) => Ok(entry.token.clone()),
                Ok(_) => Err(IssuerError::InvalidResponse {
                    issuer: format!("for {key}"),
                    detail: "the token expired as it was fetched".to_string(),
                }),
                Err(err) => Err((*err).clone()),
            };
        };
        if !entry.due(SystemTime::now(), self.refresh_ahead)
            // A refresh failed moments ago: do not ask the issuer again yet.
            || entry.failed_within(self.retry_after_failure())
            // Someone else is refreshing: the cached token is still valid, use it without waiting.
            || entry.refreshing.swap(true, Ordering::AcqRel)
        {
            return Ok(entry.token.clone());
        }
        self.fetches.fetch_add(1, Ordering::Relaxed);
        match fetch().await.and_then(|token| CachedToken::new(key, token)) {
            Ok(fresh) => {
                let token = fresh.token.clone();
                self.entries.insert(key.to_string(), Arc::new(fresh)).await;
                Ok(token)
            }
            Err(err) => {
                tracing::warn!(key, error = %err, "token refresh failed");
                *entry.failed_at.lock().unpoisoned() = Some(Instant::now());
                entry.refreshing.store(false, Ordering::Release);
                // SECURITY: fall back to the cached token only while it has not expired.
                if entry.valid(SystemTime::now()) {
                    Ok(entry.token.clone())
                } else {
                    self.entries.invalidate(key).await;
                    Err(err)
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
