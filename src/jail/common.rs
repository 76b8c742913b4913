//! What both jails share: the options, which sandbox a jail is for, and running the jailed command.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use ipnet::Ipv4Net;
use nix::sys::signal::Signal;

use std::time::Duration;

use super::limits::Supervision;
use super::limits::watch::{LimitStop, LimitWatch};
use super::net::Firewall;
use crate::config::Config;
use crate::names::SandboxId;

/// What to jail and how.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// The declared sandbox (default: the only one the config declares).
    pub(crate) sandbox: Option<String>,
    /// The pool the jail's /30 is taken from.
    pub(crate) subnet: Ipv4Net,
    /// Run the command as this user (`name`, `uid` or `uid:gid`); default: the user behind sudo.
    pub(crate) user: Option<String>,
    /// Let the command run as root (still confined, without capabilities).
    pub(crate) allow_root: bool,
    /// The configuration file, hidden from the command like cordon's other files.
    pub(crate) config_file: Option<std::path::PathBuf>,
    /// nftables or iptables (default: whichever the host has, nftables first).
    pub(crate) firewall: Option<Firewall>,
    /// The command and its arguments.
    pub(crate) command: Vec<String>,
    /// Without root: the project folder the command may write (see `user.rs`).
    pub(crate) project: Option<std::path::PathBuf>,
    /// Which home the command gets (default: a private, empty one).
    pub(crate) home: super::view::HomeMode,
    /// Leave git's files in the writable folder writable ([`super::git`]).
    pub(crate) writable_git: bool,
    /// Limits given on the command line, over the configuration's.
    pub(crate) limits: crate::config::jail::JailLimits,
    /// What makes the jail's first process start with default signal dispositions and an empty mask.
    pub(crate) child_signals: ChildSignals,
    /// What keeps the command apart from the host, over the configuration's (`jail.isolation`).
    pub(crate) isolation: Option<crate::config::jail::Isolation>,
}

/// The binary's hook that makes a command start its program with every signal's disposition at its default and
/// an empty signal mask (a `pre_exec`: the library forbids unsafe code). An ignored disposition survives exec: a
/// jail started under `nohup` or as a background job would otherwise hand its command SIGINT and SIGQUIT
/// ignored, beyond the reach even of the command's own `trap`.
pub type ChildSignals = fn(&mut std::process::Command);

/// The sandbox the jail is for: named, or the config's only one.
pub(crate) fn pick_sandbox(config: &Config, wanted: Option<&str>) -> Result<SandboxId, String> {
    match wanted {
        Some(id) if let Some(s) = config.sandboxes.iter().find(|s| s.id == id) => Ok(s.id.clone()),
        Some(id) => Err(format!(
            "--sandbox {id}: the config declares no such sandbox (a jail is for a sandbox declared under \
             `sandboxes:`, which it then knows by the jail's address)"
        )),
        None => match config.sandboxes.as_slice() {
            [one] => Ok(one.id.clone()),
            [] => Err("the config declares no sandboxes; declare one under `sandboxes:`".into()),
            _ => Err("the config declares several sandboxes; say which with --sandbox ID".into()),
        },
    }
}

/// Start `command` with nothing of cordon's environment but `PATH`, with default signal dispositions and no
/// signal blocked (`child_signals`), and wait for it, passing on the signals that
/// would otherwise end cordon and so the jail (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2); its exit
/// code (128 + signal if a signal ended it). Under `limits`, the jail is watched meanwhile, and stopped when a
/// wall-clock or idle limit is reached (SIGTERM to all its processes, SIGKILL after the grace period): its exit
/// code is then the limit's ([`LimitStop::exit_code`]).
pub(super) async fn wait(
    command: &mut tokio::process::Command,
    limits: Option<&Supervision>,
    child_signals: ChildSignals,
    reach: &SignalReach,
) -> Result<i32, String> {
    use std::os::unix::process::ExitStatusExt;
    use tokio::signal::unix::{SignalKind, signal};
    // Listening first: a signal that comes while the command starts is passed on, not lost.
    let listen = |kind: SignalKind| signal(kind).map_err(|e| e.to_string());
    let (mut term, mut int, mut hup) = (
        listen(SignalKind::terminate())?,
        listen(SignalKind::interrupt())?,
        listen(SignalKind::hangup())?,
    );
    let (mut quit, mut usr1, mut usr2) = (
        listen(SignalKind::quit())?,
        listen(SignalKind::user_defined1())?,
        listen(SignalKind::user_defined2())?,
    );
    // SECURITY: the jail's first process, and so the command, starts with default signal dispositions and no
    // signal blocked, whatever cordon was started with.
    child_signals(command.as_std_mut());
    let mut child = command
        // SECURITY: nothing of cordon's environment (an `env:` secret, CORDON_VAULT_KEY) reaches the command,
        // nor bubblewrap's own environment, which a root command could read.
        .env_clear()
        .env("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        .spawn()
        .map_err(|e| format!("cannot start {:?}: {e}", command.as_std().get_program()))?;
    let root = child.id().and_then(|p| i32::try_from(p).ok()).unwrap_or(0);
    let watching = async {
        match limits {
            Some(s) => LimitWatch { of: s, root }.run().await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(watching);
    let status = loop {
        tokio::select! {
            status = child.wait() => break status.map_err(|e| e.to_string())?,
            stop = &mut watching => return Ok(end(&mut child, limits, stop, reach).await),
            _ = term.recv() => pass(&child, reach, Signal::SIGTERM),
            _ = int.recv() => pass(&child, reach, Signal::SIGINT),
            _ = hup.recv() => pass(&child, reach, Signal::SIGHUP),
            _ = quit.recv() => pass(&child, reach, Signal::SIGQUIT),
            _ = usr1.recv() => pass(&child, reach, Signal::SIGUSR1),
            _ = usr2.recv() => pass(&child, reach, Signal::SIGUSR2),
        }
    };
    Ok(status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}

/// Whom a signal cordon gets is passed on to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum SignalReach {
    /// Every process below the jail's first one ([`forward`]): bubblewrap's jails.
    Descendants,
    /// Every process of a gVisor container, by `LINE kill --all ID SIGNAL` (`LINE`: how runsc is run for the
    /// jail): the host's processes of the jail are gVisor's own, which a signal would take down.
    Runsc(Vec<String>, String),
}

/// Stop the whole jail for `stop`: SIGTERM to every process in it, SIGKILL to what is left after the grace
/// period (and to everything in its cgroup); the limit's exit code.
async fn end(
    child: &mut tokio::process::Child,
    limits: Option<&Supervision>,
    stop: LimitStop,
    reach: &SignalReach,
) -> i32 {
    pass(child, reach, Signal::SIGTERM);
    let grace = limits.map_or(Duration::from_secs(10), |s| s.bounds.grace);
    if tokio::time::timeout(grace, child.wait()).await.is_err() {
        pass(child, reach, Signal::SIGKILL);
        if let Some(c) = limits.and_then(|s| s.bounds.cgroup.as_ref()) {
            c.kill_all();
        }
        let _ = child.kill().await;
    }
    stop.exit_code()
}

/// Pass `signal` on as `reach` says.
fn pass(child: &tokio::process::Child, reach: &SignalReach, signal: Signal) {
    match reach {
        SignalReach::Descendants => forward(child, signal),
        SignalReach::Runsc(line, id) => {
            let Some((program, args)) = line.split_first() else {
                return;
            };
            // Started, not waited for: the signal arrives while cordon goes on waiting for the command.
            let _ = std::process::Command::new(program)
                .args(args)
                .args(["kill", "--all", id, &(signal as i32).to_string()])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn();
        }
    }
}

/// Pass a signal cordon got on to every process in the jail, as a terminal's Ctrl-C reaches its whole process
/// group (the command runs in a session of its own, `--new-session`, so the terminal's reaches only cordon):
/// the descendants of bubblewrap (`child`), not bubblewrap itself, which would die of it and take the jail down
/// with SIGKILL before the command could act on it. The jail's init (bubblewrap's own, or the relay) has no
/// handler, so it ignores the signal as an init does; the command and what it started get it.
fn forward(child: &tokio::process::Child, signal: Signal) {
    let Some(root) = child.id().and_then(|p| i32::try_from(p).ok()) else {
        return;
    };
    for pid in super::procs::descendants(root) {
        // A process may have exited since: nothing to do then.
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal);
    }
}

/// A place among the jails the sandbox's user runs on this host, when `limits.per_user.jails` bounds them (held
/// until the jail ends): counted in the `control.store` file when the configuration has one, else in
/// `jails.db` in cordon's state folder ([`crate::config::paths::state_dir`]).
pub(super) fn place(config: &Config, sandbox: &SandboxId) -> Result<Option<crate::control::jails::Place>, String> {
    let Some(most) = config.jail.per_user else {
        return Ok(None);
    };
    let user = config
        .sandboxes
        .iter()
        .find(|s| s.id == *sandbox)
        .map(|s| s.user.clone())
        .unwrap_or_default();
    let (file, store) = match &config.control.store {
        Some(store) => (store.clone(), true),
        None => (crate::config::paths::state_dir()?.join("jails.db"), false),
    };
    crate::control::jails::take(&file, sandbox, &user, most, store).map(Some)
}

/// Where a jail's audit records go when the configuration sends them to a stream the command would share.
///
/// The jailed command inherits cordon's standard output and error, so records written there sit in the same
/// stream as whatever the command prints: it could write a line in cordon's format claiming a harmless request,
/// or leave half a line for cordon's next record to be glued onto. So in a jail, `audit.path: "-"` (or a path
/// that is the very stream on fd 1 or 2, such as `/dev/stdout`) becomes a file of the jail's own, which the
/// command never holds: `jail/ID/audit.jsonl` in cordon's state folder ([`crate::config::paths::state_dir`]:
/// `/var/lib/cordon` as root, else under `$XDG_STATE_HOME` or `~/.local/state`). Its path is printed on stderr
/// at start. Returns the new path, if the audit was moved.
pub(super) fn audit_apart(config: &mut Config, sandbox: &SandboxId) -> Result<Option<PathBuf>, String> {
    use crate::config::AuditConfig;
    let shared = match &config.audit {
        AuditConfig::Stdout => true,
        AuditConfig::File(path) => is_a_standard_stream(path),
    };
    if !shared {
        return Ok(None);
    }
    let base = crate::config::paths::state_dir().map_err(|e| {
        format!("audit.path is \"-\", which the jailed command would share; set audit.path to a file ({e})")
    })?;
    let dir = base.join("jail").join(sandbox.as_str());
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("cannot create {} for the jail's audit records: {e}", dir.display()))?;
    let path = dir.join("audit.jsonl");
    config.audit = AuditConfig::File(path.clone());
    Ok(Some(path))
}

/// Whether `path` is the stream on standard output or standard error (not a regular file, same device and
/// inode), as `/dev/stdout` or `/dev/fd/2` are.
fn is_a_standard_stream(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if meta.is_file() || meta.is_dir() {
        return false;
    }
    ["/proc/self/fd/1", "/proc/self/fd/2"].iter().any(|fd| {
        std::fs::metadata(fd).is_ok_and(|s| s.dev() == meta.dev() && s.ino() == meta.ino() && s.rdev() == meta.rdev())
    })
}

/// Word, from inside the jail, that bubblewrap set it up and started the program: the first thing run inside
/// is a shell that writes `ok` into a FIFO bound in from outside, then becomes the program. A jail whose
/// program never started failed itself (bubblewrap could not mount, chdir or unshare; `ip netns exec` could
/// not enter), and `cordon jail` exits 125 for it, not with bubblewrap's own code, which would pass for the
/// command's.
///
/// The FIFO is bound read-only and is write-only for its owner (cordon holds the one read end, opened before
/// the mode was narrowed): the command can neither take the word back (read it, remove it) nor store anything on
/// the host through it (a pipe holds what fits its buffer, and cordon reads only the first bytes).
pub(super) struct Started {
    fifo: PathBuf,
    read: std::fs::File,
}

impl Started {
    /// Where the FIFO is inside the jail (its `/run` is private).
    const INSIDE: &'static str = "/run/cordon-started";

    /// A fresh FIFO in `run_dir`, its read end open.
    pub(super) fn new(run_dir: &Path) -> Result<Started, String> {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let fifo = run_dir.join("started");
        let err = |e: &dyn std::fmt::Display| format!("cannot make {}: {e}", fifo.display());
        let _ = std::fs::remove_dir_all(&fifo);
        let _ = std::fs::remove_file(&fifo);
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR)
            .map_err(|e| err(&e))?;
        let read = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .map_err(|e| err(&e))?;
        // SECURITY: the start word cannot be read (taken back) or stored in by the command: write-only, read-only
        // mount.
        std::fs::set_permissions(&fifo, std::fs::Permissions::from_mode(0o200)).map_err(|e| err(&e))?;
        Ok(Started { fifo, read })
    }

    /// Bubblewrap's arguments `line` (its options, `--`, the program and its arguments) with the FIFO bound in
    /// and the program started through the shell that writes the word.
    pub(super) fn wrap(&self, line: &mut Vec<String>) {
        let Some(end) = line.iter().position(|a| a == "--") else {
            return;
        };
        let inside = Started::INSIDE;
        line.splice(
            end..=end,
            [
                "--ro-bind".into(),
                self.fifo.to_string_lossy().into_owned(),
                inside.into(),
                "--".into(),
                "/bin/sh".into(),
                "-c".into(),
                format!("printf ok > {inside} && exec \"$@\""),
                "sh".into(),
            ],
        );
    }

    /// The command's exit `code`, or an error if the program inside never started.
    pub(super) fn outcome(&self, code: i32) -> Result<i32, String> {
        use std::io::Read;
        let mut word = [0u8; 2];
        let mut read = &self.read;
        if read.read_exact(&mut word).is_ok() && &word == b"ok" {
            return Ok(code);
        }
        Err(format!(
            "the jail could not be set up (bubblewrap exited {code} before starting the command; its message is \
             above)"
        ))
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.fifo);
    }
}
