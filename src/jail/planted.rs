//! What the command leaves for the developer's own tools to run on the host after the jail: the writable folder
//! stays writable (as it must), so cordon takes a snapshot (path → SHA-256) of the files those tools run or
//! obey ([`WATCHED`]) before the command starts and compares it when the command has ended; each change is
//! printed and written to the audit, so the person sees what was planted before running git or opening an
//! editor.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

/// The files and folders (everything under them) of the writable folder that developer tools run on the host,
/// besides git's own ([`super::git::watched`]): hooks kept in the tree for `core.hooksPath` (husky, `.githooks`,
/// pre-commit's), direnv's `.envrc`, VS Code's tasks, launch configurations and settings, dev containers.
pub(crate) const WATCHED: [&str; 6] = [
    ".husky",
    ".githooks",
    ".pre-commit-config.yaml",
    ".envrc",
    ".vscode",
    ".devcontainer",
];

/// How many files under one watched folder are looked at, at most (a folder the command fills is still noticed:
/// it changes the snapshot).
const MOST: usize = 10_000;

/// Path → SHA-256 (hex) of each watched file (of a symbolic link: of its target's text, not followed).
pub(crate) type Snapshot = BTreeMap<PathBuf, String>;

/// The snapshot of `folder`'s watched files now.
pub(crate) fn snapshot(folder: &Path) -> Snapshot {
    let mut found = Snapshot::new();
    let git = super::git::watched(folder);
    for watched in WATCHED.iter().map(|w| folder.join(w)).chain(git) {
        for entry in walkdir::WalkDir::new(watched)
            .follow_links(false)
            .follow_root_links(false)
            .into_iter()
            .flatten()
            .take(MOST)
        {
            let kind = entry.file_type();
            let bytes = if kind.is_symlink() {
                std::fs::read_link(entry.path()).map(|t| t.into_os_string().into_encoded_bytes())
            } else if kind.is_file() {
                std::fs::read(entry.path())
            } else {
                continue;
            };
            if let Ok(bytes) = bytes {
                found.insert(entry.path().to_path_buf(), hex::encode(Sha256::digest(&bytes)));
            }
        }
    }
    found
}

/// One watched file that changed: its path and its hash before and after (`None`: it did not exist).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    /// The file.
    pub(crate) path: PathBuf,
    /// Its SHA-256 before the command ran.
    pub(crate) before: Option<String>,
    /// Its SHA-256 after.
    pub(crate) after: Option<String>,
}

/// What differs between `before` and `after`, by path.
pub(crate) fn changes(before: &Snapshot, after: &Snapshot) -> Vec<Change> {
    let paths: std::collections::BTreeSet<&PathBuf> = before.keys().chain(after.keys()).collect();
    paths
        .into_iter()
        .filter(|p| before.get(*p) != after.get(*p))
        .map(|p| Change {
            path: p.clone(),
            before: before.get(p).cloned(),
            after: after.get(p).cloned(),
        })
        .collect()
}

/// Compare `folder` with `before`, print each change to stderr and write an audit record for it (sandbox `id`);
/// then say which of git's files were kept read-only in the jail (`protected`).
pub(crate) fn report(
    folder: &Path,
    before: &Snapshot,
    audit: &Arc<dyn crate::audit::Sink>,
    id: &str,
    protected: &[PathBuf],
) {
    let found = changes(before, &snapshot(folder));
    if !protected.is_empty() {
        let shown: Vec<String> = protected
            .iter()
            .take(SHOWN)
            .map(|p| p.strip_prefix(folder).unwrap_or(p).display().to_string())
            .collect();
        let more = protected.len().saturating_sub(SHOWN);
        eprintln!(
            "cordon jail: read-only in the jail, for git on this host: {}{}",
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        );
    }
    if found.is_empty() {
        return;
    }
    eprintln!(
        "cordon jail: the command changed files that tools on this host run or obey; check them before running \
         git, direnv or your editor here:"
    );
    let none = "(none)";
    for c in &found {
        eprintln!(
            "cordon jail:   {}  sha256 {} -> {}",
            c.path.display(),
            c.before.as_deref().unwrap_or(none),
            c.after.as_deref().unwrap_or(none)
        );
        crate::audit::jail_file(
            audit,
            crate::audit::FileChange {
                sandbox: id,
                path: &c.path.to_string_lossy(),
                before: c.before.as_deref(),
                after: c.after.as_deref(),
            },
        );
    }
}

/// How many of git's protected paths the report names (then how many more).
const SHOWN: usize = 24;

#[cfg(test)]
#[path = "planted_tests.rs"]
mod tests;
