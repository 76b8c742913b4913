//! Where cordon's files are: its state folder, and what a configuration's relative paths mean.
//!
//! A path in a configuration file that is not absolute is read relative to the folder the file is in, so a
//! configuration means the same files from wherever cordon is started (`cordon sandbox list --config
//! /etc/cordon/cordon.yaml` run from `/tmp` finds the sandboxes `cordon run` keeps). The embedded configuration
//! has no folder of its own: its relative paths are read relative to the state folder ([`state_dir`]), never
//! the working folder, so running cordon (or `cordon jail`) in a project folder leaves nothing there.

use std::path::{Path, PathBuf};

/// The variable that names cordon's state folder outright, above every other rule of [`state_dir`].
pub(crate) const STATE_DIR_VAR: &str = "CORDON_STATE_DIR";

/// The folder cordon keeps its state in when a configuration names none (the embedded configuration's
/// `state/`, `certs`, `vault/`), in this order:
///
/// 1. `$CORDON_STATE_DIR`, when set;
/// 2. `$STATE_DIRECTORY`, which systemd sets for a unit with `StateDirectory=` (the first, if it names several);
/// 3. `/var/lib/cordon` for root;
/// 4. `$XDG_STATE_HOME/cordon`, else `$HOME/.local/state/cordon`, for any other user.
///
/// Only absolute paths count: a relative value would again depend on where cordon was started. The folder is
/// not created here; what writes into it creates what it needs (0700).
pub(crate) fn state_dir() -> Result<PathBuf, String> {
    state_dir_from(&|name| std::env::var_os(name), nix::unistd::geteuid().is_root())
}

/// [`state_dir`] with the environment and the user given, for tests.
pub(crate) fn state_dir_from(var: &dyn Fn(&str) -> Option<std::ffi::OsString>, root: bool) -> Result<PathBuf, String> {
    let absolute = |name: &str| var(name).map(PathBuf::from).filter(|p| p.is_absolute());
    if let Some(dir) = absolute(STATE_DIR_VAR) {
        return Ok(dir);
    }
    if let Some(dirs) = var("STATE_DIRECTORY")
        && let Some(first) = std::env::split_paths(&dirs).next()
        && first.is_absolute()
    {
        return Ok(first);
    }
    if root {
        return Ok(PathBuf::from("/var/lib/cordon"));
    }
    if let Some(state) = absolute("XDG_STATE_HOME") {
        return Ok(state.join("cordon"));
    }
    if let Some(home) = absolute("HOME") {
        return Ok(home.join(".local/state/cordon"));
    }
    Err(format!(
        "cannot tell where to keep cordon's state: none of {STATE_DIR_VAR}, STATE_DIRECTORY, XDG_STATE_HOME or \
         HOME names an absolute folder; set {STATE_DIR_VAR}, or give --config a file whose paths say where"
    ))
}

/// What a configuration's relative paths are read against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Base {
    /// The folder of the configuration file, or the state folder for the embedded configuration.
    Folder(PathBuf),
    /// As written (relative to the working folder): a configuration given as text with no file, in tests and
    /// in the JSON Schema's examples.
    AsWritten,
}

impl Base {
    /// The base for a configuration read from the file at `file`: its folder, made absolute (canonical when it
    /// exists: `../conf` from another folder reads as the folder it is; the file itself may be a link, as a
    /// ConfigMap's is, and its folder is still the one it was named in).
    pub(crate) fn of_file(file: &Path) -> Base {
        let folder = file
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        match std::fs::canonicalize(folder).or_else(|_| std::path::absolute(folder)) {
            Ok(folder) => Base::Folder(folder),
            Err(_) => Base::AsWritten,
        }
    }

    /// The folder relative paths are read against, if any.
    pub(crate) fn folder(&self) -> Option<&Path> {
        match self {
            Base::Folder(folder) => Some(folder),
            Base::AsWritten => None,
        }
    }

    /// `written` read against this base: unchanged when absolute (or when the base is [`Base::AsWritten`]).
    pub(crate) fn resolve(&self, written: &str) -> PathBuf {
        let path = Path::new(written);
        match self {
            Base::Folder(folder) if !path.is_absolute() => folder.join(path),
            _ => path.to_path_buf(),
        }
    }
}

#[cfg(test)]
#[path = "paths_tests.rs"]
mod tests;
