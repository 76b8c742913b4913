//! The documents of automatic persisted queries cordon has seen sent with their hash (the SHA-256 checked), per
//! endpoint (host, port, path), in this replica's memory: at most 32 MiB of documents, each kept a day after last
//! use. A hash cordon has not seen, or has forgotten, is answered `PersistedQueryNotFound`, and the client sends
//! the document again: forgetting costs a round trip, never a wrong verdict.

use std::sync::Arc;
use std::time::Duration;

use super::judge::Documents;

/// The most bytes of documents kept.
const MOST_BYTES: u64 = 32 * 1024 * 1024;

/// An endpoint and a hash.
type Key = (String, u16, String, String);

/// Every endpoint's persisted documents.
pub(crate) struct Persisted {
    cache: moka::sync::Cache<Key, Arc<str>>,
}

impl Default for Persisted {
    fn default() -> Self {
        Persisted {
            cache: moka::sync::Cache::builder()
                .max_capacity(MOST_BYTES)
                .weigher(|k: &Key, v: &Arc<str>| u32::try_from(k.3.len() + v.len()).unwrap_or(u32::MAX))
                .time_to_idle(Duration::from_secs(24 * 3600))
                .build(),
        }
    }
}

impl Persisted {
    /// The documents of one endpoint.
    pub(crate) fn at(&self, host: &str, port: u16, path: &str) -> At<'_> {
        At {
            cache: &self.cache,
            host: host.to_owned(),
            port,
            path: path.to_owned(),
        }
    }
}

/// The documents of one endpoint.
pub(crate) struct At<'a> {
    cache: &'a moka::sync::Cache<Key, Arc<str>>,
    host: String,
    port: u16,
    path: String,
}

impl At<'_> {
    fn key(&self, hash: &str) -> Key {
        (self.host.clone(), self.port, self.path.clone(), hash.to_owned())
    }
}

impl Documents for At<'_> {
    fn get(&self, hash: &str) -> Option<Arc<str>> {
        self.cache.get(&self.key(hash))
    }

    fn put(&self, hash: &str, document: Arc<str>) {
        self.cache.insert(self.key(hash), document);
    }
}

#[cfg(test)]
#[path = "persisted_tests.rs"]
mod tests;
