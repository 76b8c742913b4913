//! `cordon jail --isolation gvisor`: the root jail's command under gVisor's user-space kernel (`runsc`).
//!
//! Everything around the command is the root jail's: the network namespace and veth pair, the host-side rules
//! that send every TCP connection to cordon's transparent listener and DNS to its responder and drop the rest,
//! the cgroup and its limits, the wall and idle watch. Only what runs the command changes: instead of
//! bubblewrap, `runsc run` with an OCI bundle cordon writes here. Its mounts are the [`View`] bubblewrap would
//! have made (translated from bubblewrap's arguments, so the two jails cannot drift apart): the system folders
//! read-only, the working folder writable, a private home and private `/tmp`, `/var`, `/run` (sized by
//! `jail.disk`), cordon's files covered, the CA bundle bound in. The root is an empty folder of the jail's own,
//! read-only.
//!
//! `runsc` runs inside the jail's namespace with `--network=host`: gVisor's kernel makes its sockets in that
//! namespace, so all the command sends meets the host-side rules, as the namespace jail's does. (gVisor's own
//! network stack, `--network=sandbox`, is not used: the packaged runsc refuses it on kernels that give every
//! namespace its own `net.core` settings, which it takes for the host's namespace.)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::activity::gvisor::GvisorTrace;
use super::common::{self, ChildSignals, SignalReach};
use super::confine::{self, Who};
use super::limits::Supervision;
use super::plan::Plan;
use super::view::View;

/// What the activity log cannot record under gVisor, printed at start when `audit.activity` is on.
pub(crate) const UNRECORDED: &str = "under gVisor the activity log records renames, removals, new folders, links, \
     truncations and mknod without their paths (this gVisor reports those calls by number only), and not openat2";

/// What `runsc` is told to run, and as whom.
pub(super) struct Sandboxed<'a> {
    /// The user the command runs as.
    pub(super) who: &'a Who,
    /// What it sees of the host.
    pub(super) view: &'a View,
    /// Files bound read-only into the view (`(host path, path inside)`): the CA bundle.
    pub(super) visible: &'a [(PathBuf, PathBuf)],
    /// Its environment.
    pub(super) env: &'a BTreeMap<String, String>,
    /// The working folder it starts in.
    pub(super) cwd: &'a Path,
    /// The command and its arguments.
    pub(super) command: &'a [String],
}

/// Run the command under `runsc run` in the jail's namespace and cgroup; its exit code (128 + signal if a
/// signal ended it).
///
/// `runsc run`'s own failures (a mount it cannot make, a kernel it refuses) exit 128 as git's fatal errors do, so
/// the program's start is told apart by a word: the first thing run inside writes `ok` into a file on a 4 KiB
/// tmpfs of the jail's own (gVisor cannot open a host FIFO, which the namespace jail uses), bound in at
/// `/run/cordon-started`. A jail whose program never started is the jail's failure (`cordon jail` exits 125).
pub(super) async fn run(
    plan: &Plan,
    what: &Sandboxed<'_>,
    supervision: &Supervision,
    child_signals: ChildSignals,
) -> Result<i32, String> {
    let dir = plan.run_dir.join("gvisor");
    let state = dir.join("state");
    let id = plan.netns.clone();
    let runsc = runsc_line(&plan.netns, &state);
    delete(&runsc, &id).await;
    confine::unmount(&dir.join("word"));
    let _ = std::fs::remove_dir_all(&dir);
    let rootfs = dir.join("rootfs");
    for d in [&rootfs, &state] {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    let word = Word::new(&dir.join("word"), what.who)?;
    let trace = match supervision.activity() {
        Some((sink, sandbox, user)) => Some(GvisorTrace::start(&dir, sink, sandbox, user, WORD)?),
        None => None,
    };
    let mut args = what.view.mounts();
    for (from, at) in what.visible {
        args.extend(["--ro-bind".into(), s(from), s(at)]);
    }
    args.extend(what.view.hides());
    let mut mounts = mounts(&args, &rootfs)?;
    mounts.push(json!({"destination": WORD, "type": "bind", "source": s(&word.file), "options": ["rbind", "rw"]}));
    let mut program: Vec<String> = ["/bin/sh", "-c", &format!("printf ok > {WORD} && exec \"$@\""), "sh"]
        .map(String::from)
        .to_vec();
    program.extend(what.command.iter().cloned());
    let spec = spec(what, &rootfs, mounts, &program, rlimits(supervision));
    let text = serde_json::to_string_pretty(&spec).map_err(|e| format!("cannot write the OCI bundle: {e}"))?;
    let config = dir.join("config.json");
    std::fs::write(&config, text).map_err(|e| format!("cannot write {}: {e}", config.display()))?;
    let mut line = supervision.bounds.enter();
    line.extend(runsc.iter().cloned());
    line.extend(trace.as_ref().map(|t| format!("--pod-init-config={}", s(t.config()))));
    line.extend(["run".into(), "--bundle".into(), s(&dir), id.clone()]);
    let (program, args) = line.split_first().ok_or("an empty command line")?;
    let mut command = tokio::process::Command::new(program);
    command.args(args);
    let reach = SignalReach::Runsc(runsc.clone(), id.clone());
    let code = common::wait(&mut command, Some(supervision), child_signals, &reach).await;
    let started = word.said();
    delete(&runsc, &id).await;
    if let Some(t) = trace {
        t.finish();
    }
    drop(word);
    let _ = std::fs::remove_dir_all(&dir);
    match code? {
        code if started => Ok(code),
        code => Err(format!(
            "gVisor could not start the command (runsc exited {code}; its message is above)"
        )),
    }
}

/// Where the start word is written inside the jail.
const WORD: &str = "/run/cordon-started";

/// The start word's file, on a tmpfs of 4 KiB (all the command could store on the host through it), writable
/// by the command's user only.
struct Word {
    /// The tmpfs.
    dir: PathBuf,
    /// The file in it.
    file: PathBuf,
}

impl Word {
    fn new(dir: &Path, who: &Who) -> Result<Word, String> {
        use nix::mount::MsFlags;
        use std::os::unix::fs::PermissionsExt;
        let err = |e: &dyn std::fmt::Display| format!("cannot make {}: {e}", dir.display());
        std::fs::create_dir_all(dir).map_err(|e| err(&e))?;
        // SECURITY: what the command can write on the host through the start word is bounded: 4 KiB.
        nix::mount::mount(
            Some("cordon-started"),
            dir,
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            Some("size=4096,mode=0755"),
        )
        .map_err(|e| err(&e))?;
        let word = Word {
            dir: dir.to_path_buf(),
            file: dir.join("started"),
        };
        std::fs::write(&word.file, "").map_err(|e| err(&e))?;
        let (uid, gid, _) = ids(who);
        std::os::unix::fs::chown(&word.file, Some(uid), Some(gid)).map_err(|e| err(&e))?;
        std::fs::set_permissions(&word.file, std::fs::Permissions::from_mode(0o200)).map_err(|e| err(&e))?;
        Ok(word)
    }

    /// Whether the word is there.
    fn said(&self) -> bool {
        std::fs::read(&self.file).is_ok_and(|w| w.starts_with(b"ok"))
    }
}

impl Drop for Word {
    fn drop(&mut self) {
        confine::unmount(&self.dir);
    }
}

/// `runsc` (its line) with `args`.
fn command(runsc: &[String], args: &[&str]) -> tokio::process::Command {
    let (program, first) = runsc.split_first().map_or(("runsc", &[][..]), |(p, a)| (p.as_str(), a));
    let mut c = tokio::process::Command::new(program);
    c.args(first).args(args);
    c
}

/// How runsc is run for the jail: in its namespace (`--network=host`: gVisor's sockets are made there), with its
/// state under the jail's folder, no cgroups of its own (the jail's holds it), and no host socket or FIFO.
pub(super) fn runsc_line(netns: &str, state: &Path) -> Vec<String> {
    ["ip", "netns", "exec", netns, "runsc", "--root"]
        .map(String::from)
        .into_iter()
        .chain([
            s(state),
            "--ignore-cgroups".into(),
            "--network=host".into(),
            "--host-uds=none".into(),
            "--host-fifo=none".into(),
        ])
        .collect()
}

/// Remove what is left of the container (a jail that crashed, or `runsc wait` killed), quietly.
async fn delete(runsc: &[String], id: &str) {
    let mut c = command(runsc, &["delete", "--force", id]);
    c.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), c.status()).await;
}

/// The rlimits of the command inside gVisor: `jail.pids` as RLIMIT_NPROC (gVisor counts the command's own
/// processes; the host's pids cgroup counts gVisor's threads instead), and, where no cgroup holds them, memory as
/// RLIMIT_AS and CPU time as RLIMIT_CPU; the open files' limit is cordon's own.
fn rlimits(supervision: &Supervision) -> Vec<Value> {
    let b = &supervision.bounds;
    let mut out = Vec::new();
    let mut add = |kind: &str, n: u64| out.push(json!({"type": kind, "hard": n, "soft": n}));
    if let Some(p) = b.limits.pids {
        add("RLIMIT_NPROC", p);
    }
    for arg in b.rlimits() {
        if let Some(m) = arg.strip_prefix("--as=").and_then(|n| n.parse().ok()) {
            add("RLIMIT_AS", m);
        }
        if let Some(c) = arg.strip_prefix("--cpu=").and_then(|n| n.parse().ok()) {
            add("RLIMIT_CPU", c);
        }
    }
    let own = procfs::process::Process::myself().and_then(|p| p.limits());
    if let Ok(l) = own {
        let n = |v: procfs::process::LimitValue| match v {
            procfs::process::LimitValue::Value(n) => n,
            procfs::process::LimitValue::Unlimited => u64::MAX,
        };
        let (soft, hard) = (n(l.max_open_files.soft_limit), n(l.max_open_files.hard_limit));
        out.push(json!({"type": "RLIMIT_NOFILE", "hard": hard, "soft": soft}));
    }
    out
}

/// The OCI runtime spec of the command: `rootfs` read-only under `mounts`, the user's ids and groups, no
/// capabilities, no new privileges, its own pid, IPC, UTS and mount namespaces (the network one is the jail's).
pub(super) fn spec(
    what: &Sandboxed<'_>,
    rootfs: &Path,
    mounts: Vec<Value>,
    args: &[String],
    rlimits: Vec<Value>,
) -> Value {
    let (uid, gid, groups) = ids(what.who);
    let cwd = if what.view.shows(what.cwd) && !what.view.hidden.iter().any(|h| what.cwd.starts_with(h)) {
        what.cwd
    } else {
        Path::new("/")
    };
    let env: Vec<String> = what.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let none: Vec<String> = Vec::new();
    let hostname = nix::unistd::gethostname().map_or_else(|_| "jail".into(), |h| h.to_string_lossy().into_owned());
    json!({
        "ociVersion": "1.0.0",
        "process": {
            "user": {"uid": uid, "gid": gid, "additionalGids": groups},
            "args": args,
            "env": env,
            "cwd": s(cwd),
            "noNewPrivileges": true,
            "capabilities": {
                "bounding": none, "effective": none, "inheritable": none, "permitted": none, "ambient": none
            },
            "rlimits": rlimits,
        },
        "root": {"path": s(rootfs), "readonly": true},
        "hostname": hostname,
        "mounts": mounts,
        "linux": {
            "namespaces": [{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}],
        },
    })
}

/// The uid, gid and supplementary groups the command runs with: as `setpriv` gives them in the namespace jail
/// (a gid given: no other groups; none: the account's primary group and its groups).
fn ids(who: &Who) -> (u32, u32, Vec<u32>) {
    match who {
        Who::Root => (0, 0, Vec::new()),
        Who::User { uid, gid: Some(gid) } => (*uid, *gid, Vec::new()),
        Who::User { uid, gid: None } => match confine::account(who) {
            Some(user) => {
                let gid = user.gid.as_raw();
                let name = std::ffi::CString::new(user.name.as_bytes()).unwrap_or_default();
                let groups = nix::unistd::getgrouplist(&name, user.gid)
                    .map(|g| g.into_iter().map(|g| g.as_raw()).filter(|g| *g != gid).collect())
                    .unwrap_or_default();
                (*uid, gid, groups)
            }
            None => (*uid, *uid, Vec::new()),
        },
    }
}

/// The OCI mounts bubblewrap's arguments `args` (as [`View::mounts`], the binds of visible files and
/// [`View::hides`] write them) stand for, in order; symbolic links at the top of the view are made in `rootfs`.
/// gVisor makes the folders a mount needs, so `--dir` makes nothing; a link inside a private folder
/// (`/var/run`) cannot be made and is left out.
pub(super) fn mounts(args: &[String], rootfs: &Path) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    let (mut size, mut perms): (Option<String>, Option<String>) = (None, None);
    let mut it = args.iter();
    let bind = |from: &str, at: &str, ro: bool| json!({"destination": at, "type": "bind", "source": from, "options": ["rbind", if ro { "ro" } else { "rw" }]});
    while let Some(arg) = it.next() {
        let mut next = || it.next().cloned().ok_or_else(|| format!("{arg} without its argument"));
        match arg.as_str() {
            "--size" => size = Some(next()?),
            "--perms" => perms = Some(next()?),
            "--dir" => {
                next()?;
                perms = None;
            }
            "--dev" => out.push(json!({"destination": next()?, "type": "tmpfs", "source": "tmpfs"})),
            "--proc" => out.push(json!({"destination": next()?, "type": "proc", "source": "proc"})),
            "--ro-bind" => {
                let (from, at) = (next()?, next()?);
                // SECURITY: gVisor cannot mount over a socket or a FIFO (its sandbox would not start), and refuses
                // the command every host socket and FIFO itself (`--host-uds=none --host-fifo=none`, given
                // explicitly): one the view hides stays where it is, and cannot be connected to or opened.
                if host_pipe(&at) {
                    continue;
                }
                out.push(bind(&from, &at, true));
            }
            "--bind" => {
                let (from, at) = (next()?, next()?);
                out.push(bind(&from, &at, false));
            }
            "--tmpfs" => {
                let at = next()?;
                let mut options = vec![format!("mode={}", perms.take().unwrap_or_else(|| "0755".into()))];
                options.extend(size.take().map(|n| format!("size={n}")));
                out.push(json!({"destination": at, "type": "tmpfs", "source": "tmpfs", "options": options}));
            }
            "--symlink" => {
                let (target, at) = (next()?, next()?);
                let path = Path::new(&at);
                if path.parent() == Some(Path::new("/")) {
                    let link = rootfs.join(path.strip_prefix("/").unwrap_or(path));
                    std::os::unix::fs::symlink(&target, &link)
                        .map_err(|e| format!("cannot make {}: {e}", link.display()))?;
                }
            }
            other => return Err(format!("the gVisor jail cannot make bubblewrap's {other} into a mount")),
        }
    }
    Ok(out)
}

/// Whether `path` is a Unix socket or a FIFO on the host (the root jail's paths are the host's).
fn host_pipe(path: &str) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket() || m.file_type().is_fifo())
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

#[cfg(test)]
#[path = "gvisor_tests.rs"]
mod tests;
