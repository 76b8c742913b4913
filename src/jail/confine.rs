//! What the jailed command may touch besides the network: it runs under bubblewrap, inside the jail's network
//! namespace, in its own mount, PID, IPC and UTS namespaces, in a new session, with no capabilities, no new
//! privileges and a clean environment, as an unprivileged user unless root is asked for explicitly.
//!
//! - **Files**: the view of [`super::view`]: the system folders read-only, the working folder read-write, a
//!   private home, private `/tmp`, `/var`, `/run` and `/dev/shm`, a minimal `/dev` and the PID namespace's own
//!   `/proc`, nothing else of the host's; cordon's files and the host sockets listed at start hidden where the
//!   view shows them.
//! - **Processes**: bubblewrap is the PID namespace's init and dies with cordon (`--die-with-parent`); when it
//!   ends, the kernel kills every process left in the namespace, so nothing outlives the jail.
//! - **Terminal**: `setsid` (`--new-session`): the command has no controlling terminal, so `TIOCSTI` cannot
//!   push input into the caller's.
//! - **Privileges**: `PR_SET_NO_NEW_PRIVS` and an empty bounding, inheritable and ambient set (setuid and
//!   file capabilities give nothing), then `setpriv` to the user.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::view::{PRIVATE, View};
use crate::config::Config;
use crate::config::credentials::{KeySpec, SecretRef};

/// Whom the command runs as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Who {
    /// This uid, with this gid (and no supplementary groups), or with the user's groups when no gid was given.
    User {
        /// The uid.
        uid: u32,
        /// The gid (`None`: the user's own, with `--init-groups`).
        gid: Option<u32>,
    },
    /// root, asked for with `--allow-root` (still without capabilities).
    Root,
}

/// Who runs the command: `--user` (name, uid or uid:gid), else the user behind sudo; root only with
/// `allow_root`, whatever `SUDO_UID` says.
pub(crate) fn who(
    user: Option<&str>,
    sudo_uid: Option<&str>,
    sudo_gid: Option<&str>,
    allow_root: bool,
) -> Result<Who, String> {
    let parse = |what: &str, v: &str| -> Result<u32, String> {
        if let Ok(n) = v.parse() {
            return Ok(n);
        }
        match nix::unistd::User::from_name(v) {
            Ok(Some(u)) => Ok(u.uid.as_raw()),
            _ => Err(format!("{what} {v:?} is neither a uid nor a user on this host")),
        }
    };
    let (uid, gid) = match (user, sudo_uid) {
        (Some(u), _) => match u.split_once(':') {
            Some((uid, gid)) => (parse("--user", uid)?, Some(parse("--user", gid)?)),
            None => (parse("--user", u)?, None),
        },
        (None, Some(uid)) => (
            parse("SUDO_UID", uid)?,
            sudo_gid.map(|g| parse("SUDO_GID", g)).transpose()?,
        ),
        (None, None) if allow_root => return Ok(Who::Root),
        (None, None) => {
            return Err(
                "the command would run as root, and root is not confined the way a user is; give \
                        --user NAME (or run cordon jail through sudo as that user), or --allow-root"
                    .into(),
            );
        }
    };
    match uid {
        0 if allow_root => Ok(Who::Root),
        0 => Err("the command would run as root (uid 0); give --user with another user, or --allow-root".into()),
        uid => Ok(Who::User { uid, gid }),
    }
}

/// The environment the command gets: the sandbox's, plus the few variables of the caller's that say nothing
/// secret (search path, terminal, locale, time zone), and the user's name and home.
pub(crate) fn environment(sandbox: &BTreeMap<String, String>, who: &Who) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = ["PATH", "TERM", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ"]
        .into_iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
        .collect();
    env.entry("PATH".into())
        .or_insert_with(|| "/usr/local/bin:/usr/bin:/bin".into());
    if let Some(user) = account(who) {
        env.insert("USER".into(), user.name.clone());
        env.insert("LOGNAME".into(), user.name);
        env.insert("HOME".into(), user.dir.to_string_lossy().into_owned());
    }
    env.extend(sandbox.iter().map(|(k, v)| (k.clone(), v.clone())));
    env
}

/// The account the command runs as, from the user database.
pub(crate) fn account(who: &Who) -> Option<nix::unistd::User> {
    let uid = match who {
        Who::User { uid, .. } => *uid,
        Who::Root => 0,
    };
    nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
}

/// The folder the root jail's command may write: the working folder, unless it is `/` or holds a system folder,
/// a private one or the home (binding it would show the host's own).
pub(crate) fn working_folder(cwd: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let holds = |p: &Path| p.starts_with(cwd);
    let too_wide = cwd == Path::new("/")
        || super::view::SYSTEM
            .iter()
            .chain(PRIVATE.iter())
            .any(|p| holds(Path::new(p)))
        || home.is_some_and(holds);
    (!too_wide).then(|| cwd.to_path_buf())
}

/// Every file and folder of cordon's that the configuration names (and the configuration itself), absolute and
/// canonical ([`super::view::resolve`]).
pub(crate) fn cordons_files(config: &Config, config_file: Option<&Path>) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = config_file.map(Path::to_path_buf).into_iter().collect();
    paths.push(config.ca.dir.clone());
    // The vault and its key when a secret is read from it (or the vault exists), the placeholder key when there
    // are credentials (or it exists): what cordon opens or makes under this configuration.
    let from_vault = config
        .credentials
        .values()
        .flat_map(crate::secrets::refs)
        .chain(config.control.refs())
        .any(|r| matches!(r, SecretRef::Vault(_)));
    if from_vault || config.vault.path.exists() {
        paths.push(config.vault.path.clone());
        if let KeySpec::File(key) = &config.vault.key {
            paths.push(key.clone());
        }
    }
    let mut placeholder_key = config.vault.path.clone();
    placeholder_key.set_file_name("placeholder.key");
    if !config.credentials.is_empty() || placeholder_key.exists() {
        paths.push(placeholder_key);
    }
    if let Some(store) = &config.control.store {
        for suffix in ["", "-wal", "-shm"] {
            paths.push(PathBuf::from(format!("{}{suffix}", store.display())));
        }
    }
    let otlp = config.audit_chain.otlp.iter();
    paths.extend(otlp.clone().map(|o| o.spool.clone()));
    let previews = config.previews.iter();
    let refs = config
        .control
        .refs()
        .chain(config.audit_chain.signing_key.iter())
        .chain(otlp.flat_map(|o| o.headers.iter().map(|(_, r)| r)))
        .chain(previews.flat_map(|p| p.tls.iter().flat_map(|(c, k)| [c, k]).chain(p.key.iter())))
        .chain(config.approval.webhook.iter().filter_map(|w| w.secret.as_ref()))
        .chain(config.credentials.values().flat_map(crate::secrets::refs));
    paths.extend(refs.filter_map(|r| match r {
        SecretRef::File(p) => Some(p.clone()),
        _ => None,
    }));
    paths.extend(config.audit_file().map(Path::to_path_buf));
    let mut paths: Vec<PathBuf> = paths.iter().map(|p| super::view::resolve(p)).collect();
    paths.sort();
    paths.dedup();
    paths
}

/// Unix sockets bound by path on the host, in any network namespace that has a process (each one's
/// `/proc/PID/net/unix`), as they were named at bind: hidden where the view shows them (in the system folders
/// or the writable one; every other folder is not in the view at all).
pub(crate) fn host_sockets() -> Vec<PathBuf> {
    let mut namespaces = std::collections::HashSet::new();
    let mut found = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in procs.flatten() {
        let pid = entry.file_name();
        if !pid.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        // One table per network namespace: path sockets are reachable from any of them.
        let Ok(ns) = std::fs::read_link(entry.path().join("ns/net")) else {
            continue;
        };
        if !namespaces.insert(ns) {
            continue;
        }
        let Ok(table) = std::fs::read_to_string(entry.path().join("net/unix")) else {
            continue;
        };
        found.extend(
            table
                .lines()
                .skip(1)
                .filter_map(|line| line.split_whitespace().nth(7))
                .filter(|path| path.starts_with('/'))
                .map(PathBuf::from),
        );
    }
    found.sort();
    found.dedup();
    found
}

/// The bubblewrap and setpriv command line that runs `command` confined in `view`, with `visible` files bound
/// in read-only, each `(host path, path inside)` (the CA file; the activity log's socket and cordon's binary, in
/// the private `/run`) before the view hides what it hides, in `cwd` (or `/`, when the view does not show it),
/// with exactly `env`.
pub(crate) fn command_line(
    who: &Who,
    view: &View,
    visible: &[(PathBuf, PathBuf)],
    env: &BTreeMap<String, String>,
    cwd: &Path,
    command: &[String],
) -> Vec<String> {
    let mut a: Vec<String> = vec!["bwrap".into()];
    a.extend(view.mounts());
    for (from, path) in visible {
        // Its folders in the private tmpfs are made readable (bubblewrap would make them 0700, root's).
        let mut folders: Vec<&Path> = path.ancestors().skip(1).filter(|f| f.parent().is_some()).collect();
        folders.reverse();
        for folder in folders {
            if PRIVATE.iter().any(|p| folder.starts_with(p) && folder != Path::new(p)) {
                a.extend([
                    "--perms".into(),
                    "0755".into(),
                    "--dir".into(),
                    folder.to_string_lossy().into_owned(),
                ]);
            }
        }
        a.extend([
            "--ro-bind".into(),
            from.to_string_lossy().into_owned(),
            path.to_string_lossy().into_owned(),
        ]);
    }
    a.extend(view.hides());
    // `/` when the view does not show it (bubblewrap changes folder before it becomes the user, and without
    // capabilities root cannot enter the user's private home).
    let cwd = if view.shows(cwd) && !view.hidden.iter().any(|h| cwd.starts_with(h)) {
        cwd
    } else {
        Path::new("/")
    };
    a.extend(["--chdir".into(), cwd.to_string_lossy().into_owned()]);
    // SECURITY: its own processes (all killed when the jail ends), a new session (no TIOCSTI into the caller's
    // terminal), no capabilities and a clean environment.
    a.extend(
        [
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--clearenv",
        ]
        .map(String::from),
    );
    // Only what setpriv needs to become the user and to empty the bounding set; it gives them up.
    for cap in ["CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"] {
        a.extend(["--cap-add".into(), cap.into()]);
    }
    for (k, v) in env {
        a.extend(["--setenv".into(), k.clone(), v.clone()]);
    }
    a.extend(["--".into(), "setpriv".into()]);
    match who {
        Who::User { uid, gid: Some(gid) } => {
            a.extend([
                format!("--reuid={uid}"),
                format!("--regid={gid}"),
                "--clear-groups".into(),
            ]);
        }
        Who::User { uid, gid: None } => {
            a.extend([
                format!("--reuid={uid}"),
                format!("--regid={uid}"),
                "--init-groups".into(),
            ]);
        }
        Who::Root => {}
    }
    a.extend(
        [
            "--no-new-privs",
            "--bounding-set=-all",
            "--inh-caps=-all",
            "--ambient-caps=-all",
            "--",
        ]
        .map(String::from),
    );
    a.extend(command.iter().cloned());
    a
}

/// Make `dir` the command's private home for this run: a fresh tmpfs of at most `size` bytes (the `disk` limit)
/// mounted there, the command's user's, `0711` (so that bubblewrap, root without capabilities by then, can pass
/// through it to a working folder inside), in a parent only root may enter (other users of the host cannot
/// reach it). What it holds is counted in no host file system: the run folder is on the host's `/run`.
pub(crate) fn fresh_home(dir: &Path, who: &Who, size: Option<u64>) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let err = |e: &dyn std::fmt::Display| format!("cannot make the private home {}: {e}", dir.display());
    if let Some(parent) = dir.parent() {
        // What a jail that was killed left mounted there.
        unmount(dir);
        if parent.exists() {
            std::fs::remove_dir_all(parent).map_err(|e| err(&e))?;
        }
        std::fs::create_dir_all(parent).map_err(|e| err(&e))?;
        std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o700)).map_err(|e| err(&e))?;
    }
    std::fs::create_dir(dir).map_err(|e| err(&e))?;
    let (uid, gid) = match who {
        Who::User { uid, gid } => {
            let primary = account(who).map(|u| u.gid.as_raw());
            (*uid, gid.or(primary).unwrap_or(*uid))
        }
        Who::Root => (0, 0),
    };
    let mut options = format!("mode=0711,uid={uid},gid={gid}");
    if let Some(size) = size {
        options.push_str(&format!(",size={size}"));
    }
    use nix::mount::MsFlags;
    // SECURITY: the private home is a tmpfs of its own, at most the disk limit: not the host's /run.
    nix::mount::mount(
        Some("cordon-home"),
        dir,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(options.as_str()),
    )
    .map_err(|e| err(&e))
}

/// What is mounted under `dir` (not `dir` itself), deepest first: what a jail killed outright left mounted in
/// its run folder (its private home, the gVisor jail's start word).
pub(crate) fn mounts_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found: Vec<std::path::PathBuf> = procfs::process::Process::myself()
        .and_then(|p| p.mountinfo())
        .map(|m| m.into_iter().map(|m| m.mount_point).collect())
        .unwrap_or_default();
    found.retain(|p| p.starts_with(dir) && p != dir);
    found.sort_by(|a, b| {
        b.components()
            .count()
            .cmp(&a.components().count())
            .then_with(|| a.cmp(b))
    });
    found.dedup();
    found
}

/// Detach what is mounted at `dir` (nothing, most often).
pub(crate) fn unmount(dir: &Path) {
    let _ = nix::mount::umount2(dir, nix::mount::MntFlags::MNT_DETACH);
}

#[cfg(test)]
#[path = "confine_tests.rs"]
mod tests;
