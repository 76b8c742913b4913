//! Every secret value cordon has obtained, by credential: what the exfiltration scan looks for in requests,
//! and what masking looks for in responses. A token that rotates keeps its last few values here, so one
//! that was applied a moment ago is still recognised.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use secrecy::{ExposeSecret, SecretString};

use crate::locks::Unpoisoned;

/// How many values of one credential are remembered (its newest).
const KEPT: usize = 8;

/// The values, and a version that changes whenever one is added.
#[derive(Default)]
pub(crate) struct Book {
    values: Mutex<BTreeMap<String, Vec<SecretString>>>,
    version: AtomicU64,
}

impl Book {
    /// Remember that `credential` had `value`.
    pub(crate) fn record(&self, credential: &str, value: &SecretString) {
        let mut values = self.values.lock().unpoisoned();
        let known = values.entry(credential.to_string()).or_default();
        if known.iter().any(|v| v.expose_secret() == value.expose_secret()) {
            return;
        }
        if known.len() == KEPT {
            known.remove(0);
        }
        known.push(value.clone());
        drop(values);
        self.version.fetch_add(1, Ordering::Release);
    }

    /// The values known for `credential`.
    pub(crate) fn of(&self, credential: &str) -> Vec<SecretString> {
        let values = self.values.lock().unpoisoned();
        values.get(credential).cloned().unwrap_or_default()
    }

    /// Every value known, with its credential, and the version they are of.
    pub(crate) fn all(&self) -> (u64, Vec<(String, SecretString)>) {
        let values = self.values.lock().unpoisoned();
        let version = self.version.load(Ordering::Acquire);
        let all = values
            .iter()
            .flat_map(|(c, vs)| vs.iter().map(move |v| (c.clone(), v.clone())))
            .collect();
        (version, all)
    }

    /// The version of what is known (changes when a value is added).
    pub(crate) fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }
}

#[cfg(test)]
#[path = "book_tests.rs"]
mod tests;
