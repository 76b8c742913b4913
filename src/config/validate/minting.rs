//! `allow_minting:` of a credential: minting calls it may make, each one cordon knows for its kind; and
//! `kind:`, which says a credential is a GitHub one where its source and hosts do not.

use super::fields::Errors;
use crate::config::credentials::SecretSource;
use crate::config::minting::{Kind, named, names};

/// The kinds of minting call a credential from `source` can make: AWS keys sign AWS calls; every other
/// credential is injected as it is, and can carry an OAuth2 token request; a GitHub one, GitHub's calls too.
fn kinds(source: &SecretSource, github: bool) -> &'static [Kind] {
    match source {
        SecretSource::Aws(_) => &[Kind::Aws],
        _ if github => &[Kind::GitHub, Kind::OAuth2],
        _ => &[Kind::OAuth2],
    }
}

/// Whether a credential is a GitHub one: its source is a GitHub App, a host it is bound to is `github.com` or
/// under it, or its `kind` (at `path`) says `github`, the only kind there is to say.
pub(super) fn github(
    errs: &mut Errors,
    path: &str,
    kind: Option<&str>,
    source: Option<&SecretSource>,
    hosts: &[String],
) -> bool {
    let named = match kind.map(str::trim) {
        None => false,
        Some(k) if k.eq_ignore_ascii_case("github") => true,
        Some(k) => {
            errs.at(
                path,
                format!("{k:?} is not a kind cordon knows; the one there is: github (a GitHub Enterprise API host)"),
            );
            false
        }
    };
    let github_host = |h: &String| {
        let h = h.trim().trim_end_matches('.').to_ascii_lowercase();
        h == "github.com" || h.ends_with(".github.com")
    };
    named || matches!(source, Some(SecretSource::GitHubApp(_))) || hosts.iter().any(github_host)
}

/// The entries of `raw` at `path`, as the table names them; unknown names and names of another kind are errors.
pub(super) fn allow(
    errs: &mut Errors,
    path: &str,
    source: &SecretSource,
    github: bool,
    raw: Vec<String>,
) -> Vec<&'static str> {
    let kinds = kinds(source, github);
    let mut out = Vec::new();
    for (i, entry) in raw.iter().enumerate() {
        let at = format!("{path}[{i}]");
        match named(entry.trim()) {
            Some(m) if kinds.contains(&m.kind) => {
                if !out.contains(&m.name) {
                    out.push(m.name);
                }
            }
            Some(m) => {
                let hint = match m.kind {
                    Kind::GitHub => " (bind it to a GitHub host, or say `kind: github`)",
                    Kind::Aws => " (`source.aws`)",
                    Kind::OAuth2 => " (AWS keys sign requests; they carry no OAuth2 token request)",
                };
                errs.at(
                    at,
                    format!(
                        "{entry:?} is a minting call of {} credentials; this credential is not one{hint}",
                        m.kind.name()
                    ),
                );
            }
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
