//! cordon's files known by what they are, not by name: a path is one spelling of a file, and a hard link is
//! another, which hiding by path does not catch. So at start every file of cordon's (each file under a folder
//! of cordon's, such as the CA folder) is taken by (device, inode), and the jail is refused when a file of the
//! writable folder is one of them (a hard link made there, by anyone, reads as the key itself), or when
//! cordon's own standard input, output or error is one (`cordon jail ... >> audit.jsonl` hands the command an
//! open descriptor of the audit log, to write records into; `< vault.key` hands it the key).

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// How many files under one folder of cordon's are taken, and how many entries of the writable folder are
/// looked at, at most.
const MOST: usize = 200_000;

/// cordon's files by (device, inode).
fn inodes(files: &[PathBuf]) -> HashMap<(u64, u64), PathBuf> {
    let mut found = HashMap::new();
    for file in files {
        for entry in walkdir::WalkDir::new(file)
            .follow_links(false)
            .into_iter()
            .take(MOST)
            .flatten()
        {
            if let Ok(meta) = std::fs::metadata(entry.path())
                && meta.is_file()
            {
                found.insert((meta.dev(), meta.ino()), entry.path().to_path_buf());
            }
        }
    }
    found
}

/// Refuse when one of cordon's `files` is, by device and inode, a file of `folder` (`what` the folder is) or
/// cordon's standard input, output or error.
pub(crate) fn refuse_links(files: &[PathBuf], folder: Option<&Path>, what: &str) -> Result<(), String> {
    let ours = inodes(files);
    // SECURITY: none of cordon's files reaches the command as a descriptor it inherits.
    for (fd, name) in [(0, "standard input"), (1, "standard output"), (2, "standard error")] {
        let Ok(meta) = std::fs::metadata(format!("/proc/self/fd/{fd}")) else {
            continue;
        };
        if let Some(file) = ours.get(&(meta.dev(), meta.ino())).filter(|_| meta.is_file()) {
            return Err(format!(
                "cordon's {name} is {}, one of cordon's own files (its configuration, a key, the vault, the store or \
                 the audit log): the jailed command would inherit it, to read or write; send the {name} elsewhere",
                file.display()
            ));
        }
    }
    let Some(folder) = folder else { return Ok(()) };
    // SECURITY: a hard link of one of cordon's files in the folder the command may write is refused, whatever its
    // name (only a file with more than one link can be another's).
    for entry in walkdir::WalkDir::new(folder)
        .follow_links(false)
        .into_iter()
        .take(MOST)
        .flatten()
    {
        if !entry.file_type().is_file() {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        if meta.nlink() < 2 {
            continue;
        }
        if let Some(file) = ours.get(&(meta.dev(), meta.ino())) {
            return Err(format!(
                "{} is a hard link of {}, one of cordon's own files (its configuration, a key, the vault, the store \
                 or the audit log), and lies inside {} ({what}); the command could read or change it there: remove the \
                 link, or jail another folder",
                entry.path().display(),
                file.display(),
                folder.display()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "links_tests.rs"]
mod tests;
