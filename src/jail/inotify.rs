//! inotify instances and watches are counted per user, and a user's allowance on the host
//! (`fs.inotify.max_user_instances`, often 128, and `max_user_watches`) is shared by everything they run: a jail
//! of theirs could take all of it, and their editor, file manager and build watchers would stop seeing changes.
//! The kernel counts them per user namespace too, and charges each one in every namespace above, each with a
//! limit of its own (`/proc/sys/user/max_inotify_instances` and `max_inotify_watches`, which the namespace's
//! owner may set). So the jail without root runs bubblewrap inside a user namespace of its own whose limits are
//! half the host's: the jail's processes can take at most that, and the user keeps the other half.
//!
//! bubblewrap makes `/proc/sys` read-only inside, so the limits are set outside it: `unshare --user
//! --map-root-user` makes the namespace, a shell (root in it, with its capabilities there alone) writes them, and
//! bubblewrap, started there, maps the user back to their own uid and gid in the jail's namespace.

use std::process::{Command, Stdio};

/// What a jail may hold, at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bound {
    /// inotify instances.
    pub(crate) instances: u64,
    /// inotify watches.
    pub(crate) watches: u64,
}

/// Half the host's per-user allowance (at least 1 each), from `/proc/sys/fs/inotify`.
pub(crate) fn half() -> Result<Bound, String> {
    let read = |name: &str| -> Result<u64, String> {
        let path = format!("/proc/sys/fs/inotify/{name}");
        std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {path}: {e}"))?
            .trim()
            .parse::<u64>()
            .map_err(|e| format!("{path}: {e}"))
    };
    Ok(Bound {
        instances: (read("max_user_instances")? / 2).max(1),
        watches: (read("max_user_watches")? / 2).max(1),
    })
}

/// The shell that sets `bound` in the namespace it runs in, then becomes the rest of the line.
fn setter(bound: Bound) -> String {
    format!(
        "echo {} > /proc/sys/user/max_inotify_instances && echo {} > /proc/sys/user/max_inotify_watches && exec \"$@\"",
        bound.instances, bound.watches
    )
}

/// The bound for the jail and the line that starts bubblewrap under it, or why there is none (no `unshare`, or
/// a host that gives an unprivileged user namespace no capabilities, as Ubuntu's AppArmor may): tried first.
pub(crate) fn prefix() -> Result<(Bound, Vec<String>), String> {
    let bound = half()?;
    let line: Vec<String> = ["unshare", "--user", "--map-root-user", "--", "/bin/sh", "-c"]
        .map(String::from)
        .into_iter()
        .chain([setter(bound), "sh".into()])
        .collect();
    let tried = Command::new(&line[0])
        .args(&line[1..])
        .arg("true")
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("cannot run unshare (util-linux): {e}"))?;
    if !tried.status.success() {
        return Err(format!(
            "unshare --user --map-root-user could not set the user namespace's inotify limits: {}",
            String::from_utf8_lossy(&tried.stderr).trim()
        ));
    }
    Ok((bound, line))
}

/// bubblewrap's arguments that map the user back to their own uid and gid inside (under [`prefix`] it runs as
/// root of the namespace it was started in).
pub(crate) fn same_user() -> Vec<String> {
    vec![
        "--uid".into(),
        nix::unistd::getuid().as_raw().to_string(),
        "--gid".into(),
        nix::unistd::getgid().as_raw().to_string(),
    ]
}
