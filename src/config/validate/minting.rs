//! `allow_minting:` of a credential: minting calls it may make, each one cordon knows for its kind.

use super::fields::Errors;
use crate::config::credentials::SecretSource;
use crate::config::minting::{Kind, named, names};

/// The kinds of minting call a credential from `source` can make: AWS keys sign AWS calls. (GitHub and OAuth2
/// token endpoints are not refused yet, so nothing can be allowed for them.)
fn kinds(source: &SecretSource) -> &'static [Kind] {
    match source {
        SecretSource::Aws(_) => &[Kind::Aws],
        _ => &[],
    }
}

/// The entries of `raw` at `path`, as the table names them; unknown names and names of another kind are errors.
pub(super) fn allow(errs: &mut Errors, path: &str, source: &SecretSource, raw: Vec<String>) -> Vec<&'static str> {
    let kinds = kinds(source);
    let mut out = Vec::new();
    if kinds.is_empty() && !raw.is_empty() {
        errs.at(
            path,
            "only AWS credentials (`source.aws`) refuse minting calls so far; remove `allow_minting`",
        );
        return out;
    }
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
