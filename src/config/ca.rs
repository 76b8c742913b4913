//! `ca:`: the per-sandbox certificate authorities' folder and their leaves, as written and validated.

use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::errors::Errors;
use super::fields::{A_COUNT, duration, whole};
use super::scalars::Whole;
use super::shapes;

/// `ca:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawCa {
    /// Folder holding one sub-folder per sandbox.
    pub(crate) dir: Option<String>,
    /// Lifetime of minted leaf certificates.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) leaf_validity: Option<String>,
    /// Leaf certificates kept ready.
    pub(crate) leaf_cache: Option<Whole>,
}

/// `ca:`
#[derive(Debug, Clone)]
pub struct CaConfig {
    /// Folder with one sub-folder per sandbox (`<dir>/<sandbox>/ca.pem`, `ca.key`).
    pub dir: PathBuf,
    /// Lifetime of minted leaves.
    pub(crate) leaf_validity: Duration,
    /// Leaves kept ready (entries of the (sandbox, host) cache).
    pub(crate) leaf_cache: u64,
}

impl Default for CaConfig {
    fn default() -> Self {
        CaConfig {
            dir: PathBuf::from("certs"),
            leaf_validity: Duration::from_secs(24 * 3600),
            leaf_cache: 10_000,
        }
    }
}

/// `ca:`: the folder (read against the file's base), a leaf lifetime of at least 1h, and the leaf cache.
pub(super) fn ca(errs: &mut Errors, raw: RawCa) -> CaConfig {
    let mut ca = CaConfig::default();
    ca.dir = errs.path(&ca.dir.to_string_lossy());
    if let Some(dir) = raw.dir {
        if dir.trim().is_empty() {
            errs.at("ca.dir", "is empty; name a folder, e.g. \"certs\"");
        }
        ca.dir = errs.path(&dir);
    }
    ca.leaf_validity = duration(errs, "ca.leaf_validity", raw.leaf_validity, ca.leaf_validity);
    if ca.leaf_validity < Duration::from_secs(3600) {
        errs.at(
            "ca.leaf_validity",
            "must be at least 1h (leaves are cached for a quarter of it)",
        );
    }
    if let Some(n) = whole(errs, "ca.leaf_cache", raw.leaf_cache, A_COUNT) {
        match u64::try_from(n) {
            Ok(n) if n >= 1 => ca.leaf_cache = n,
            _ => errs.at("ca.leaf_cache", format!("{n} must be at least 1")),
        }
    }
    ca
}
