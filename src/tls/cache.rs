//! A bounded cache of minted leaves, so that a TLS interception costs a key generation and a signature only once
//! per (sandbox, CA, name) and time-to-live.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use moka::sync::Cache;

use super::ca::{CaError, SandboxCa};
use super::leaf::{LeafName, mint_config};
use crate::names::SandboxId;

/// The longest time a leaf stays cached (moka refuses anything near 1000 years; a leaf needs far less).
pub(crate) const MAX_TTL: Duration = Duration::from_secs(365 * 86_400);

/// What a cached leaf is for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CacheKey {
    sandbox: SandboxId,
    /// The issuing CA's key identifier: a leaf of a rotated-out CA is never served for the new one, even if
    /// [`LeafCache::invalidate_sandbox`] was not called or raced with a mint.
    ca_key_id: Vec<u8>,
    /// Normalized, so that `API.example.com.` and `api.example.com` share one leaf.
    name: LeafName,
}

/// Leaf server configurations by (sandbox, CA, name), bounded in entries and in age.
pub struct LeafCache {
    configs: Cache<CacheKey, Arc<rustls::ServerConfig>>,
    leaf_validity: Duration,
    ttl: Duration,
    mints: AtomicU64,
}

impl std::fmt::Debug for LeafCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeafCache")
            .field("entries", &self.configs.entry_count())
            .field("ttl", &self.ttl)
            .field("leaf_validity", &self.leaf_validity)
            .field("mints", &self.mints())
            .finish()
    }
}

impl LeafCache {
    /// A cache of at most `capacity` leaves minted with `leaf_validity`, each dropped `ttl` after it was minted.
    ///
    /// `ttl` is clamped to half of `leaf_validity`, so a leaf still has at least half its validity left when it
    /// is last served (room for clock skew and long handshakes), and to [`MAX_TTL`]; [`LeafCache::ttl`] tells the
    /// value in use.
    pub fn new(capacity: u64, ttl: Duration, leaf_validity: Duration) -> LeafCache {
        let ttl = ttl.min(leaf_validity / 2).min(MAX_TTL);
        LeafCache {
            configs: Cache::builder().max_capacity(capacity).time_to_live(ttl).build(),
            leaf_validity,
            ttl,
            mints: AtomicU64::new(0),
        }
    }

    /// The server configuration for `name` in `ca`'s sandbox, minting a leaf on a miss. Concurrent misses for
    /// one key mint once; the others wait and share the result (or the error).
    pub fn get(&self, ca: &Arc<SandboxCa>, name: &LeafName) -> Result<Arc<rustls::ServerConfig>, CaError> {
        self.lookup(ca, name).map(|(config, _)| config)
    }

    /// As [`LeafCache::get`], also telling whether the leaf was already there (a hit) or minted now.
    pub(crate) fn lookup(
        &self,
        ca: &Arc<SandboxCa>,
        name: &LeafName,
    ) -> Result<(Arc<rustls::ServerConfig>, bool), CaError> {
        let name = name.normalized()?;
        // Checked here too, not only in `mint`, so that the caller gets this error as such rather than wrapped in
        // `CaError::Awaited` (moka hands errors of the minting closure out behind an `Arc`).
        if !ca.scope().permits(&name) {
            return Err(CaError::OutOfScope {
                sandbox: ca.sandbox().to_string(),
                name: name.to_string(),
            });
        }
        let key = CacheKey {
            // SECURITY: cross-sandbox isolation: a leaf signed by one sandbox's CA is never served to another.
            sandbox: ca.sandbox().clone(),
            ca_key_id: ca.key_id().to_vec(),
            name: name.clone(),
        };
        let entry = self
            .configs
            .entry(key)
            .or_try_insert_with(|| {
                let config = mint_config(ca, &name, self.leaf_validity)?;
                self.mints.fetch_add(1, Ordering::Relaxed);
                Ok(config)
            })
            .map_err(|shared| Arc::try_unwrap(shared).unwrap_or_else(CaError::Awaited))?;
        let hit = !entry.is_fresh();
        Ok((entry.into_value(), hit))
    }

    /// Drops every leaf of one sandbox (after its CA was rotated, or the sandbox removed).
    pub(crate) fn invalidate_sandbox(&self, sandbox: &SandboxId) {
        let keys: Vec<Arc<CacheKey>> = self
            .configs
            .iter()
            .filter(|(key, _)| key.sandbox == *sandbox)
            .map(|(key, _)| key)
            .collect();
        for key in keys {
            self.configs.invalidate(&*key);
        }
    }

    /// How many leaves this cache has minted: for tests and metrics.
    pub(crate) fn mints(&self) -> u64 {
        self.mints.load(Ordering::Relaxed)
    }

    /// The time-to-live in use, after clamping.
    #[cfg(test)]
    pub(crate) fn ttl(&self) -> Duration {
        self.ttl
    }
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
