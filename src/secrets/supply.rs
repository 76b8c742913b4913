//! Which credentials cordon could not supply the last time it tried, for `/readyz`: a vault or OpenBao read,
//! an OAuth2 or GitHub token, AWS keys or a role's session. A failure is kept until the next success of the same
//! credential, so a replica whose issuer is down says so, and which, instead of answering ready while every
//! request that needs it fails.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

/// The credentials whose last supply failed, with why and since when.
#[derive(Debug, Default)]
pub(crate) struct Supply {
    failing: Mutex<BTreeMap<String, Failing>>,
    /// Whether `failing` holds anything: a success while nothing fails (every request's case) takes no
    /// lock. Written under the lock; a success racing a first failure of the same credential may keep that
    /// failure until the credential's next supply, never lose a failure.
    any: AtomicBool,
}

/// One credential's failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failing {
    /// Why (never a secret: the sources' errors name where they looked, not what they found).
    pub(crate) error: String,
    /// When it first failed, since the last success.
    pub(crate) since: SystemTime,
}

impl Supply {
    /// Note how supplying `credential` went.
    pub(crate) fn note<T>(&self, credential: &str, outcome: &Result<T, String>) {
        if outcome.is_ok() && !self.any.load(Ordering::Acquire) {
            return;
        }
        let mut failing = self.failing.lock().unwrap_or_else(|p| p.into_inner());
        match outcome {
            Ok(_) => {
                failing.remove(credential);
            }
            Err(e) => {
                let since = failing.get(credential).map_or_else(SystemTime::now, |f| f.since);
                failing.insert(
                    credential.to_string(),
                    Failing {
                        error: e.clone(),
                        since,
                    },
                );
            }
        }
        self.any.store(!failing.is_empty(), Ordering::Release);
    }

    /// The credentials failing now, by name.
    pub(crate) fn failing(&self) -> BTreeMap<String, Failing> {
        self.failing.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[cfg(test)]
#[path = "supply_tests.rs"]
mod tests;
