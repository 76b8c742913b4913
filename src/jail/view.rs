//! The file system both jails show the command: not the host's root with holes punched in it, but a view built
//! up from nothing (bubblewrap's empty root) out of read-only binds of the system folders ([`SYSTEM`]), a
//! private, empty home, the one folder the command may write, and fresh, empty `/tmp`, `/var`, `/run` and
//! `/dev/shm`. Every other host folder (`/var/lib`, `/var/spool`, `/home`, `/root`, `/srv`, `/mnt`, …) is simply
//! not there, so a Unix socket a host service binds in one (by any name, by a relative path, renamed or
//! hard-linked after bind, or created after the jail started) has no path inside.
//!
//! What stays reachable by path is what lives in the bound folders: the system folders (read-only; a host
//! service rarely binds a socket under `/etc`, `/usr` or `/opt`) and the writable folder (a tool run on the host
//! may, e.g. `git fsmonitor--daemon`'s `.git/fsmonitor--daemon.ipc`). Those the host's socket tables list at
//! start are hidden as before; one created there later is not. A read-only mount does not stop `connect()`, and
//! no mount flag does.
//!
//! cordon's own files are resolved to absolute, canonical paths (relative ones against the working folder, as
//! `cordon run` opens them) and hidden after every other mount; one inside the writable folder is refused, since
//! the command could replace it there for cordon's next run.

use std::path::{Component, Path, PathBuf};

/// The host folders the command sees, read-only (a symbolic link, as `/bin` is on a merged-`/usr` system, stays
/// one).
pub(crate) const SYSTEM: [&str; 9] = [
    "/usr", "/etc", "/opt", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// Folders the command gets empty and private (a fresh tmpfs each).
pub(crate) const PRIVATE: [&str; 5] = ["/tmp", "/var", "/run", "/dev/shm", "/var/tmp"];

/// What a developer's home holds that an agent must not read (hidden when the real home is shown).
pub(crate) const HOME_SECRETS: [&str; 13] = [
    ".ssh",
    ".aws",
    ".config/gcloud",
    ".azure",
    ".docker",
    ".kube",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".config/gh",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials.toml",
];

/// Which home the command gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum HomeMode {
    /// A private folder, empty at each start (`--home private`, the default).
    #[default]
    Private,
    /// The user's own, read-only, with [`HOME_SECRETS`] hidden (`--home real`).
    Real,
}

/// Where a private home lives. Either way it is a tmpfs of the jail's own, at most the `disk` limit in size: not
/// a folder of a host file system the limit does not reach (the root jail's run folder is on the host's `/run`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PrivateHome {
    /// This host folder, a tmpfs cordon mounted there for the jail (the root jail's: it belongs to the command's
    /// user, which bubblewrap, running as root, could not make it inside).
    Host(PathBuf),
    /// A tmpfs bubblewrap makes inside the jail (the project jail's: bubblewrap runs as the user).
    Fresh,
}

/// The command's file system, as bubblewrap arguments.
#[derive(Debug, Clone)]
pub(crate) struct View {
    /// The folder the command may write (the project), if any.
    pub(crate) writable: Option<PathBuf>,
    /// The size of each private tmpfs (`jail` `disk`), if bounded.
    pub(crate) tmpfs_size: Option<u64>,
    /// The user's home as the command sees it.
    pub(crate) home: Option<PathBuf>,
    /// A private home shown at `home`; `None`: the real one, read-only.
    pub(crate) private_home: Option<PrivateHome>,
    /// The binds that keep git's files in the writable folder read-only (the git guard's; none with
    /// `--writable-git`).
    pub(crate) git: Vec<String>,
    /// What must read as nothing (absolute, canonical): cordon's files, the host sockets listed at start.
    pub(crate) hidden: Vec<PathBuf>,
    /// The empty file shown instead of a hidden file.
    pub(crate) empty: PathBuf,
}

/// `path` made absolute against the working folder (what the kernel does with the relative path `cordon run`
/// opens), with every symbolic link of the part that exists resolved.
pub(crate) fn resolve(path: &Path) -> PathBuf {
    let Ok(absolute) = std::path::absolute(path) else {
        return path.to_path_buf();
    };
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            return rest.iter().rev().fold(real, |p: PathBuf, c| p.join(c));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return absolute,
        }
    }
}

/// Refuse when one of cordon's `files` lies inside `folder` (both resolved), `what` the folder is to the jail:
/// the command could read it there, or replace it for cordon's next run.
pub(crate) fn refuse_inside(files: &[PathBuf], folder: &Path, what: &str) -> Result<(), String> {
    // SECURITY: none of cordon's files (configuration, keys, vault, store, audit log) lies where the command may
    // write.
    match files.iter().find(|f| f.starts_with(folder) || folder.starts_with(f)) {
        Some(file) => Err(format!(
            "{} is one of cordon's own files (its configuration, a key, the vault, the store or the audit log) and \
             lies inside {} ({what}); the command could read or replace it there: keep cordon's files outside it \
             (absolute paths in the configuration) or jail another folder",
            file.display(),
            folder.display()
        )),
        None => Ok(()),
    }
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// How many components deep `p` is.
fn depth(p: &Path) -> usize {
    p.components().filter(|c| matches!(c, Component::Normal(_))).count()
}

impl View {
    /// Whether `path` (absolute) is in a folder the view binds from the host.
    pub(crate) fn shows(&self, path: &Path) -> bool {
        let private_home = self.private_home.is_some() && self.home.as_deref().is_some_and(|h| path.starts_with(h));
        if private_home || PRIVATE.iter().any(|p| path.starts_with(p)) {
            return self.writable.as_deref().is_some_and(|w| path.starts_with(w));
        }
        SYSTEM.iter().any(|p| path.starts_with(p))
            || self.writable.as_deref().is_some_and(|w| path.starts_with(w))
            || self.home.as_deref().is_some_and(|h| path.starts_with(h))
    }

    /// The mounts, up to the writable folder and its guards; the caller adds its own binds after them, then
    /// [`View::hides`].
    pub(crate) fn mounts(&self) -> Vec<String> {
        let mut a: Vec<String> = ["--dev", "/dev", "--proc", "/proc"].map(String::from).to_vec();
        for dir in SYSTEM {
            let path = Path::new(dir);
            match std::fs::read_link(path) {
                Ok(target) => a.extend(["--symlink".into(), s(&target), dir.into()]),
                Err(_) if path.is_dir() => a.extend(["--ro-bind".into(), dir.into(), dir.into()]),
                Err(_) => {}
            }
        }
        for dir in PRIVATE {
            // Writable by everyone, sticky, as the host's are.
            let mode = if dir == "/var" || dir == "/run" { "0755" } else { "1777" };
            // SECURITY: each private folder holds at most the jail's disk limit (a tmpfs is memory).
            if let Some(size) = self.tmpfs_size {
                a.extend(["--size".into(), size.to_string()]);
            }
            a.extend(["--perms".into(), mode.into(), "--tmpfs".into(), dir.into()]);
        }
        a.extend(
            [
                "--symlink",
                "../run",
                "/var/run",
                "--symlink",
                "../run/lock",
                "/var/lock",
            ]
            .map(String::from),
        );
        // The home and the writable folder, the shallower first, so the deeper shows on top of it.
        let mut binds: Vec<(PathBuf, PathBuf, &str)> = Vec::new();
        if let Some(home) = &self.home {
            match &self.private_home {
                Some(PrivateHome::Host(private)) => binds.push((private.clone(), home.clone(), "--bind")),
                Some(PrivateHome::Fresh) => binds.push((PathBuf::new(), home.clone(), "--tmpfs")),
                None => binds.push((home.clone(), home.clone(), "--ro-bind")),
            }
        }
        if let Some(w) = &self.writable {
            binds.push((w.clone(), w.clone(), "--bind"));
        }
        binds.sort_by_key(|(_, at, _)| depth(at));
        let targets: Vec<PathBuf> = binds.iter().map(|(_, at, _)| at.clone()).collect();
        for (from, at, how) in binds {
            // The folders bubblewrap makes on the way are made traversable (it would make them 0700, root's).
            let mut folders: Vec<&Path> = at.ancestors().skip(1).filter(|f| f.parent().is_some()).collect();
            folders.reverse();
            for folder in folders {
                let given = SYSTEM
                    .iter()
                    .chain(PRIVATE.iter())
                    .any(|p| folder.starts_with(p) && (folder == Path::new(p) || SYSTEM.contains(p)));
                if !given && !targets.iter().any(|t| t == folder) {
                    a.extend(["--perms".into(), "0755".into(), "--dir".into(), s(folder)]);
                }
            }
            if how == "--tmpfs" {
                // SECURITY: the private home holds at most the jail's disk limit, like the private folders.
                if let Some(size) = self.tmpfs_size {
                    a.extend(["--size".into(), size.to_string()]);
                }
                a.extend(["--perms".into(), "0700".into(), "--tmpfs".into(), s(&at)]);
            } else {
                a.extend([how.into(), s(&from), s(&at)]);
            }
        }
        if self.private_home.is_none()
            && let Some(home) = &self.home
        {
            self.hide_into(&mut a, HOME_SECRETS.iter().map(|h| home.join(h)));
        }
        a.extend(self.git.iter().cloned());
        a
    }

    /// The hiding mounts, last, so that nothing bound before shows a hidden file again.
    pub(crate) fn hides(&self) -> Vec<String> {
        let mut a = Vec::new();
        self.hide_into(&mut a, self.hidden.iter().cloned());
        a
    }

    fn hide_into(&self, a: &mut Vec<String>, paths: impl Iterator<Item = PathBuf>) {
        for path in paths {
            if !self.shows(&path) {
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            // SECURITY: cordon's keys, vault, store, configuration and audit log, the user's credentials (with
            // the real home) and the host sockets listed at start read as nothing, wherever the view shows them.
            if meta.is_dir() {
                a.extend(["--tmpfs".into(), s(&path)]);
            } else {
                a.extend(["--ro-bind".into(), s(&self.empty), s(&path)]);
            }
        }
    }
}

#[cfg(test)]
#[path = "view_tests.rs"]
mod tests;
