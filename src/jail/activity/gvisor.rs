//! The activity log under gVisor, from gVisor's own event stream (Runtime Monitoring): the namespace jails'
//! seccomp recorder would see gVisor's host calls, not the command's, so `runsc` is told (`--pod-init-config`)
//! to send the points cordon records to a Unix socket cordon listens on, and cordon writes the same `exec` and
//! `file` records, through the same rate limit ([`super::rate`]), as the namespace jails.
//!
//! The wire (gVisor's remote sink, as the packaged runsc 20221219 speaks it): a `SOCK_SEQPACKET` socket; gVisor
//! sends a handshake (a protobuf `Handshake` with its version) and reads one back; then every message is a
//! header of 8 bytes (its size, the message's type, the count of points gVisor dropped so far, in the host's
//! byte order) followed by one protobuf message of that type. cordon declares the few messages it reads below,
//! with the field numbers of gVisor's `.proto` files.
//!
//! What it records: every program started (`sentry/execve`: the path it was run by, its arguments, folder,
//! process, its parent (learnt from `sentry/clone`) and uid), every `open`, `openat`, `creat` that writes (at
//! the call's exit, so a refused one is an attempt with gVisor's error; one with `O_CREAT` is a `create` whether
//! or not the file was there), and the renames, removals, new folders and other files (`mknod`), links and
//! truncations, which this gVisor reports by number only: those records say what was done and by which process,
//! with the path `?` (unreadable). `openat2` is not recorded (its flags are in the caller's memory, which gVisor
//! does not send). Paths are as the command named them, joined to its folder or descriptor as gVisor names it,
//! not resolved through links. Points gVisor dropped (its sink never waits for cordon) are counted and said once
//! the jail ends.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use prost::Message;
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketAddrUnix, SocketType};

use super::decode::CallEvent;
use super::gvisor_wire::{
    GvClone, GvExecve, GvExit, GvHandshake, GvOpen, GvSyscall, HEADER, SENTRY_CLONE, SENTRY_EXEC, SYSCALL_OPEN,
    SYSCALL_RAW, VERSION,
};
use super::{Log, Worker, rate, summarise, write};
use crate::audit::Sink;
use crate::names::SandboxId;

/// What gVisor reports without the path: the record's text.
const NO_PATH: &str = "gVisor reports this call by number only, without its path";

/// The largest message read (arguments of a program included); a longer one is cut and skipped.
const MOST_MESSAGE: usize = 1 << 20;
/// The most arguments of a program recorded, and their bytes in all (as the namespace jails).
const MOST_ARGS: usize = 256;
const MOST_ARG_BYTES: usize = 16 * 1024;

/// Each process's parent (thread group ids in gVisor), learnt from `sentry/clone`: what an `exec` record's `ppid`
/// is. Bounded: past [`MOST_PARENTS`] the oldest half is forgotten (their programs are then recorded without a
/// `ppid`), so a fork flood cannot grow it without end.
#[derive(Default)]
pub(crate) struct Parents {
    of: std::collections::HashMap<i32, (i32, u64)>,
    clock: u64,
}

/// The most processes whose parent is remembered.
const MOST_PARENTS: usize = 1 << 16;

impl Parents {
    /// `child` was made by `parent` (a thread of its own group is no new process).
    fn made(&mut self, parent: i32, child: i32) {
        if parent == child || child <= 0 {
            return;
        }
        if self.of.len() >= MOST_PARENTS {
            let mut ages: Vec<u64> = self.of.values().map(|(_, at)| *at).collect();
            ages.sort_unstable();
            let cut = ages[ages.len() / 2];
            self.of.retain(|_, (_, at)| *at > cut);
        }
        self.clock += 1;
        self.of.insert(child, (parent, self.clock));
    }

    /// The parent of `child`, if known.
    fn of(&self, child: i32) -> Option<u32> {
        self.of.get(&child).and_then(|(p, _)| u32::try_from(*p).ok())
    }
}

/// The calls gVisor reports by number only that cordon records: (number, name, operation).
#[cfg(target_arch = "x86_64")]
const RAW: &[(i64, &str, &str)] = &[
    (libc::SYS_unlink, "unlink", "remove"),
    (libc::SYS_unlinkat, "unlinkat", "remove"),
    (libc::SYS_rmdir, "rmdir", "remove"),
    (libc::SYS_rename, "rename", "rename"),
    (libc::SYS_renameat, "renameat", "rename"),
    (libc::SYS_renameat2, "renameat2", "rename"),
    (libc::SYS_mkdir, "mkdir", "mkdir"),
    (libc::SYS_mkdirat, "mkdirat", "mkdir"),
    (libc::SYS_link, "link", "link"),
    (libc::SYS_linkat, "linkat", "link"),
    (libc::SYS_symlink, "symlink", "link"),
    (libc::SYS_symlinkat, "symlinkat", "link"),
    (libc::SYS_truncate, "truncate", "write"),
    (libc::SYS_mknod, "mknod", "create"),
    (libc::SYS_mknodat, "mknodat", "create"),
];
#[cfg(not(target_arch = "x86_64"))]
const RAW: &[(i64, &str, &str)] = &[
    (libc::SYS_unlinkat, "unlinkat", "remove"),
    (libc::SYS_renameat, "renameat", "rename"),
    (libc::SYS_renameat2, "renameat2", "rename"),
    (libc::SYS_mkdirat, "mkdirat", "mkdir"),
    (libc::SYS_linkat, "linkat", "link"),
    (libc::SYS_symlinkat, "symlinkat", "link"),
    (libc::SYS_truncate, "truncate", "write"),
    (libc::SYS_mknodat, "mknodat", "create"),
];

/// The session gVisor is told to run: the points cordon records, to the socket `endpoint`.
pub(crate) fn session(endpoint: &Path) -> serde_json::Value {
    let context = ["group_id", "credentials", "cwd"];
    let point = |name: String, optional: &[&str]| serde_json::json!({"name": name, "optional_fields": optional, "context_fields": context});
    let mut points = vec![point("sentry/execve".into(), &[]), point("sentry/clone".into(), &[])];
    for open in ["open", "openat", "creat"] {
        let optional: &[&str] = if open == "open" { &[] } else { &["fd_path"] };
        points.push(point(format!("syscall/{open}/exit"), optional));
    }
    // A raw call's exit carries the context its enter point asks for (so this gVisor reads its fields): both are
    // asked, and the enter is left unrecorded.
    for (n, _, _) in RAW {
        points.push(point(format!("syscall/sysno/{n}/enter"), &[]));
        points.push(point(format!("syscall/sysno/{n}/exit"), &[]));
    }
    serde_json::json!({"trace_session": {
        "name": "Default",
        "points": points,
        "sinks": [{"name": "remote", "config": {"endpoint": endpoint.to_string_lossy()}}],
    }})
}

/// cordon's side under gVisor: the socket gVisor's sink connects to, the session file `runsc` is given, and the
/// thread that records what comes.
pub(crate) struct GvisorTrace {
    config: PathBuf,
    worker: Worker,
}

impl GvisorTrace {
    /// Listen at `dir/trace.sock` (root's only: `runsc` connects as root) and write the session to
    /// `dir/trace.json`; record what the jail of `sandbox` and `user` does, into `sink`, but for writes to `own`
    /// (cordon's start word).
    pub(crate) fn start(
        dir: &Path,
        sink: Arc<dyn Sink>,
        sandbox: &SandboxId,
        user: &str,
        own: &str,
    ) -> Result<Self, String> {
        let socket = dir.join("trace.sock");
        let err = |e: &dyn std::fmt::Display| format!("cannot listen on {}: {e}", socket.display());
        let _ = std::fs::remove_file(&socket);
        let listener = rustix::net::socket(AddressFamily::UNIX, SocketType::SEQPACKET, None).map_err(|e| err(&e))?;
        let addr = SocketAddrUnix::new(&socket).map_err(|e| err(&e))?;
        rustix::net::bind(&listener, &addr).map_err(|e| err(&e))?;
        rustix::net::listen(&listener, 1).map_err(|e| err(&e))?;
        let config = dir.join("trace.json");
        let text = serde_json::to_string(&session(&socket)).map_err(|e| e.to_string())?;
        std::fs::write(&config, text).map_err(|e| format!("cannot write {}: {e}", config.display()))?;
        let log = Log {
            sink,
            sandbox: sandbox.clone(),
            user: user.to_owned(),
        };
        let own = own.to_owned();
        let worker = Worker::spawn("cordon-gvisor-trace", move |stop| {
            let dropped = receive(&listener, &stop, &log, &own);
            if dropped > 0 {
                eprintln!(
                    "cordon jail: the activity log missed {dropped} events gVisor dropped (cordon read too slowly)"
                );
                tracing::warn!(sandbox = %log.sandbox, dropped, "activity log: gVisor dropped events");
            }
        })?;
        Ok(GvisorTrace { config, worker })
    }

    /// The session file, for `runsc --pod-init-config`.
    pub(crate) fn config(&self) -> &Path {
        &self.config
    }

    /// Stop once gVisor is gone (its end of the socket closed), writing the last summaries.
    pub(crate) fn finish(mut self) {
        self.worker.finish();
    }
}

/// Whether `fd` is readable within `ms` milliseconds (or hung up).
fn ready(fd: impl AsFd, ms: u16) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
    matches!(poll(&mut fds, PollTimeout::from(ms)), Ok(n) if n > 0)
}

/// Take gVisor's connection (until `stop`), answer its handshake, and record each message until it is gone; how
/// many events gVisor said it dropped.
fn receive(listener: &OwnedFd, stop: &AtomicBool, log: &Log, own: &str) -> u32 {
    let conn = loop {
        if ready(listener, 200) {
            match rustix::net::accept(listener) {
                Ok(c) => break c,
                Err(e) => {
                    tracing::warn!("activity log: gVisor's connection failed: {e}");
                    return 0;
                }
            }
        }
        if stop.load(Ordering::Relaxed) {
            return 0;
        }
    };
    let mut buf = vec![0u8; MOST_MESSAGE];
    let shook = ready(&conn, 10_000)
        .then(|| rustix::net::recv(&conn, &mut buf[..], RecvFlags::empty()).ok())
        .flatten()
        .and_then(|(n, _)| GvHandshake::decode(&buf[..n]).ok())
        .map(|_| GvHandshake { version: VERSION }.encode_to_vec())
        .is_some_and(|answer| rustix::net::send(&conn, &answer, SendFlags::empty()).is_ok());
    if !shook {
        eprintln!("cordon jail: activity log off: gVisor's event stream did not start");
        return 0;
    }
    let mut tally = rate::Tally::default();
    let mut parents = Parents::default();
    let mut dropped = 0u32;
    let mut quiet_since: Option<Instant> = None;
    loop {
        let readable = ready(&conn, 200);
        if tally.due() {
            summarise(&mut tally, log);
        }
        if readable {
            match rustix::net::recv(&conn, &mut buf[..], RecvFlags::empty()) {
                Ok((0, _)) | Err(_) => break,
                Ok((n, full)) if n == full && n >= HEADER => {
                    dropped = dropped.max(u32::from_ne_bytes([buf[4], buf[5], buf[6], buf[7]]));
                    let size = usize::from(u16::from_ne_bytes([buf[0], buf[1]])).clamp(HEADER, n);
                    let kind = u16::from_ne_bytes([buf[2], buf[3]]);
                    match event(kind, &buf[size..n], &mut parents) {
                        Some(CallEvent::File { path, .. }) if path == own => {}
                        Some(event) => write(&mut tally, log, event),
                        None => {}
                    }
                }
                Ok(_) => {}
            }
            quiet_since = None;
        } else if stop.load(Ordering::Relaxed) {
            // gVisor is gone but its end may be held a moment longer: a quiet second ends the log.
            let since = *quiet_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= Duration::from_secs(1) {
                break;
            }
        }
    }
    summarise(&mut tally, log);
    dropped
}

/// The event of the message `body` of type `kind`, if cordon records it; `parents` learns from the clones.
fn event(kind: u16, body: &[u8], parents: &mut Parents) -> Option<CallEvent> {
    match kind {
        SENTRY_CLONE => {
            let m = GvClone::decode(body).ok()?;
            let parent = m.context_data.map_or(0, |c| c.thread_group_id);
            parents.made(parent, m.created_thread_group_id);
            None
        }
        SENTRY_EXEC => {
            let m = GvExecve::decode(body).ok()?;
            let ctx = m.context_data.unwrap_or_default();
            let (mut argv, mut bytes) = (Vec::new(), 0);
            for a in &m.argv {
                if argv.len() >= MOST_ARGS || bytes + a.len() > MOST_ARG_BYTES {
                    break;
                }
                bytes += a.len();
                argv.push(a.clone());
            }
            Some(CallEvent::Exec {
                anonymous: m.binary_path.is_empty(),
                path: if m.binary_path.is_empty() {
                    "?".into()
                } else {
                    joined(&ctx.cwd, &m.binary_path)
                },
                truncated: argv.len() < m.argv.len(),
                argv,
                cwd: ctx.cwd,
                pid: pid(ctx.thread_group_id),
                ppid: parents.of(ctx.thread_group_id),
                uid: ctx.credentials.map_or(0, |c| c.real_uid),
                error: None,
                unreadable: None,
            })
        }
        SYSCALL_OPEN => {
            let m = GvOpen::decode(body).ok()?;
            if !super::decode::opens_for_writing(u64::from(m.flags)) {
                return None;
            }
            let ctx = m.context_data.unwrap_or_default();
            let from = if m.fd == i64::from(libc::AT_FDCWD) || m.fd_path.is_empty() {
                &ctx.cwd
            } else {
                &m.fd_path
            };
            let creates = m.flags & (libc::O_CREAT as u32) != 0;
            Some(CallEvent::File {
                op: if creates { "create" } else { "write" },
                path: joined(from, &m.pathname),
                to: None,
                pid: pid(ctx.thread_group_id),
                error: m.exit.as_ref().and_then(error),
                unreadable: None,
                syscall: open_name(m.sysno, m.fd),
            })
        }
        SYSCALL_RAW => {
            let m = GvSyscall::decode(body).ok()?;
            m.exit.as_ref()?;
            let (_, name, op) = RAW.iter().find(|(n, _, _)| u64::try_from(*n).ok() == Some(m.sysno))?;
            let ctx = m.context_data.unwrap_or_default();
            Some(CallEvent::File {
                op,
                path: "?".into(),
                to: None,
                pid: pid(ctx.thread_group_id),
                error: m.exit.as_ref().and_then(error),
                unreadable: Some(NO_PATH.into()),
                syscall: name,
            })
        }
        _ => None,
    }
}

fn pid(tgid: i32) -> u32 {
    u32::try_from(tgid).unwrap_or(0)
}

/// Which of `open`, `openat`, `creat` the call was (`creat` and `open` have no descriptor of their own).
fn open_name(sysno: u64, fd: i64) -> &'static str {
    if u64::try_from(libc::SYS_openat).ok() == Some(sysno) {
        return "openat";
    }
    #[cfg(target_arch = "x86_64")]
    if u64::try_from(libc::SYS_creat).ok() == Some(sysno) {
        return "creat";
    }
    let _ = fd;
    "open"
}

/// `name` as the command named it, from the folder `from` when it is relative; `.` and empty parts left out
/// (`..` is kept: only resolving links would say where it leads).
pub(crate) fn joined(from: &str, name: &str) -> String {
    let whole = if name.starts_with('/') {
        name.to_owned()
    } else {
        format!("{from}/{name}")
    };
    let parts: Vec<&str> = whole.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    format!("/{}", parts.join("/"))
}

/// The error a call's exit names, as the namespace jails name the ones they see.
fn error(exit: &GvExit) -> Option<&'static str> {
    if exit.errorno == 0 && exit.result >= 0 {
        return None;
    }
    let known: &[(i32, &'static str)] = &[
        (libc::ENOENT, "ENOENT"),
        (libc::EEXIST, "EEXIST"),
        (libc::EACCES, "EACCES"),
        (libc::EPERM, "EPERM"),
        (libc::EROFS, "EROFS"),
        (libc::ENOTDIR, "ENOTDIR"),
        (libc::EISDIR, "EISDIR"),
        (libc::ELOOP, "ELOOP"),
        (libc::ENOTEMPTY, "ENOTEMPTY"),
        (libc::EXDEV, "EXDEV"),
        (libc::EBUSY, "EBUSY"),
        (libc::ENOSPC, "ENOSPC"),
        (libc::EDQUOT, "EDQUOT"),
        (libc::ENAMETOOLONG, "ENAMETOOLONG"),
        (libc::EINVAL, "EINVAL"),
        (libc::ETXTBSY, "ETXTBSY"),
        (libc::EMFILE, "EMFILE"),
    ];
    let errno = if exit.errorno != 0 { exit.errorno } else { -exit.result };
    Some(
        known
            .iter()
            .find(|(e, _)| i64::from(*e) == errno)
            .map_or("EOTHER", |(_, name)| name),
    )
}

#[cfg(test)]
#[path = "gvisor_tests.rs"]
mod tests;
