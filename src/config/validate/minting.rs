//! `allow_minting:` of a credential: minting calls it may make, each one cordon knows for its kind.

use super::fields::Errors;
use crate::config::credentials::SecretSource;
use crate::config::minting::{Kind, named, names};

/// The kinds of minting call a credential from `source` can make: AWS keys sign AWS calls; a GitHub App's
/// tokens, or a stored token, call the GitHub API; OAuth2 client credentials reach their token endpoint.
fn kinds(source: &SecretSource) -> &'static [Kind] {
    match source {
        SecretSource::Aws(_) => &[Kind::Aws],
        SecretSource::GitHubApp(_) => &[Kind::GitHub],
        SecretSource::OAuth2(_) => &[Kind::OAuth2],
        SecretSource::Static(_) => &[Kind::GitHub],
    }
}

/// The entries of `raw` at `path`, as the table names them; unknown names and names of another kind are errors.
pub(super) fn allow(errs: &mut Errors, path: &str, source: &SecretSource, raw: Vec<String>) -> Vec<&'static str> {
    let kinds = kinds(source);
    let mut out = Vec::new();
    for (i, entry) in raw.iter().enumerate() {
        let at = format!("{path}[{i}]");
        match named(entry.trim()) {
            Some(m) if kinds.contains(&m.kind) => {
                if !out.contains(&m.name) {
                    out.push(m.name);
                }
            }
            Some(m) => errs.at(
                at,
                format!(
                    "{entry:?} is a minting call of {} credentials; this credential is not one",
                    m.kind.name()
                ),
            ),
            None => {
                let known: Vec<&str> = kinds.iter().flat_map(|k| names(*k)).collect();
                errs.at(
                    at,
                    format!(
                        "{entry:?} is not a minting call cordon refuses; for this credential: {}",
                        known.join(", ")
                    ),
                );
            }
        }
    }
    out
}
