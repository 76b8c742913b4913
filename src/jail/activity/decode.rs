//! What a waiting system call of a jailed command did, read from the kernel's notification and the caller's
//! memory and `/proc` entries: a program started (its path, arguments, folder, pid, parent, uid) or a file
//! written, created, renamed or removed (its path, as the command sees its file system).
//!
//! Read while the call waits, before cordon lets it go on; another thread of the caller could change the memory
//! read in between, so what a record says is what the caller asked when cordon looked (seccomp_unotify(2)).

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use cordon_unotify::Notification;

/// The longest path read.
const MOST_PATH: usize = 4096;
/// The most arguments of a program recorded.
const MOST_ARGS: usize = 256;
/// The most bytes of arguments recorded in all.
const MOST_ARG_BYTES: usize = 16 * 1024;
/// `AT_FDCWD`: a path relative to the caller's working folder.
const AT_FDCWD: i64 = -100;

/// What one call did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// A program started.
    Exec {
        path: String,
        argv: Vec<String>,
        /// Whether `argv` was cut short ([`MOST_ARGS`], [`MOST_ARG_BYTES`]).
        truncated: bool,
        cwd: String,
        pid: u32,
        ppid: u32,
        uid: u32,
    },
    /// A file written, made, renamed or removed.
    File {
        op: &'static str,
        path: String,
        /// For a rename or link: where to.
        to: Option<String>,
        pid: u32,
    },
}

/// The caller's memory, read through `/proc/PID/mem`.
struct Memory(std::fs::File);

impl Memory {
    fn open(pid: u32) -> Option<Memory> {
        std::fs::File::open(format!("/proc/{pid}/mem")).ok().map(Memory)
    }

    /// The NUL-terminated string at `addr` (at most `most` bytes), read a page at a time so that an unmapped
    /// page after it does not fail the read.
    fn string(&self, addr: u64, most: usize) -> Option<String> {
        if addr == 0 {
            return None;
        }
        let mut out = Vec::new();
        let mut at = addr;
        while out.len() < most {
            let room = 4096 - (at % 4096) as usize;
            let mut buf = vec![0u8; room.min(most - out.len())];
            let n = self.0.read_at(&mut buf, at).ok()?;
            if n == 0 {
                break;
            }
            if let Some(end) = buf[..n].iter().position(|&b| b == 0) {
                out.extend_from_slice(&buf[..end]);
                return Some(String::from_utf8_lossy(&out).into_owned());
            }
            out.extend_from_slice(&buf[..n]);
            at += n as u64;
        }
        Some(String::from_utf8_lossy(&out).into_owned())
    }

    /// The pointer-sized word at `addr`.
    fn word(&self, addr: u64) -> Option<u64> {
        let mut buf = [0u8; 8];
        (self.0.read_at(&mut buf, addr).ok()? == 8).then(|| u64::from_ne_bytes(buf))
    }

    /// The `argv` array at `addr`: its strings, and whether it was cut short.
    fn strings(&self, addr: u64) -> (Vec<String>, bool) {
        let mut out = Vec::new();
        let mut bytes = 0;
        for i in 0..MOST_ARGS {
            let Some(ptr) = self.word(addr + 8 * i as u64) else {
                return (out, true);
            };
            if ptr == 0 {
                return (out, false);
            }
            let Some(s) = self.string(ptr, MOST_ARG_BYTES.saturating_sub(bytes).max(1)) else {
                return (out, true);
            };
            bytes += s.len();
            out.push(s);
            if bytes >= MOST_ARG_BYTES {
                return (out, true);
            }
        }
        (out, true)
    }
}

/// `path` as the caller meant it: absolute as given, else under the folder `dirfd` names (its working folder
/// for `AT_FDCWD`).
fn resolve(pid: u32, dirfd: i64, path: &str) -> String {
    if path.starts_with('/') {
        return path.to_owned();
    }
    let base = if dirfd == AT_FDCWD {
        std::fs::read_link(format!("/proc/{pid}/cwd"))
    } else {
        std::fs::read_link(format!("/proc/{pid}/fd/{dirfd}"))
    };
    match base {
        Ok(base) => Path::new(&base).join(path).to_string_lossy().into_owned(),
        Err(_) => path.to_owned(),
    }
}

/// The parent and real uid of `pid`.
fn parent_and_uid(pid: u32) -> (u32, u32) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    (field("PPid:"), field("Uid:"))
}

/// Whether `path` (as the caller sees its file system) names something now; for a path to be made, whether its
/// folder does. A call on what is not there fails, and is not recorded (`execvp` tries every folder of `PATH`).
fn there(pid: u32, path: &str, made: bool) -> bool {
    let inside = |p: &Path| PathBuf::from(format!("/proc/{pid}/root")).join(p.strip_prefix("/").unwrap_or(p));
    let path = Path::new(path);
    if made {
        return path.parent().is_none_or(|dir| inside(dir).is_dir());
    }
    std::fs::symlink_metadata(inside(path)).is_ok()
}

/// What the waiting call `n` does, if it is one cordon records, its memory could be read, and what it names is
/// there.
pub(crate) fn event(n: &Notification) -> Option<Event> {
    let event = read(n)?;
    let ok = match &event {
        Event::Exec { path, .. } => there(n.pid, path, false),
        Event::File { op, path, .. } => there(n.pid, path, matches!(*op, "create" | "mkdir" | "link")),
    };
    ok.then_some(event)
}

/// What the waiting call `n` asks, read from its memory.
fn read(n: &Notification) -> Option<Event> {
    let mem = Memory::open(n.pid)?;
    let nr = i64::from(n.nr);
    let a = n.args;
    let path = |addr: u64| mem.string(addr, MOST_PATH);
    let at = |dirfd: u64, addr: u64| Some(resolve(n.pid, dirfd as i64 as i32 as i64, &path(addr)?));
    let file = |op: &'static str, path: Option<String>, to: Option<String>| {
        Some(Event::File {
            op,
            path: path?,
            to,
            pid: n.pid,
        })
    };
    match nr {
        libc::SYS_execve | libc::SYS_execveat => {
            let (dirfd, name, args) = if nr == libc::SYS_execve {
                (AT_FDCWD as u64, a[0], a[1])
            } else {
                (a[0], a[1], a[2])
            };
            let (argv, truncated) = mem.strings(args);
            let (ppid, uid) = parent_and_uid(n.pid);
            let cwd = std::fs::read_link(format!("/proc/{}/cwd", n.pid)).unwrap_or_else(|_| PathBuf::from("?"));
            Some(Event::Exec {
                path: at(dirfd, name)?,
                argv,
                truncated,
                cwd: cwd.to_string_lossy().into_owned(),
                pid: n.pid,
                ppid,
                uid,
            })
        }
        libc::SYS_openat | libc::SYS_openat2 => {
            let created = nr == libc::SYS_openat && (a[2] as i32 & libc::O_CREAT) != 0;
            file(if created { "create" } else { "write" }, at(a[0], a[1]), None)
        }
        libc::SYS_truncate => file("write", at(AT_FDCWD as u64, a[0]), None),
        libc::SYS_renameat | libc::SYS_renameat2 => file("rename", at(a[0], a[1]), at(a[2], a[3])),
        libc::SYS_unlinkat => file("remove", at(a[0], a[1]), None),
        libc::SYS_mkdirat => file("mkdir", at(a[0], a[1]), None),
        libc::SYS_linkat => file("link", at(a[2], a[3]), at(a[0], a[1])),
        libc::SYS_symlinkat => file("link", at(a[1], a[2]), path(a[0])),
        #[cfg(target_arch = "x86_64")]
        libc::SYS_open => {
            let created = (a[1] as i32 & libc::O_CREAT) != 0;
            file(
                if created { "create" } else { "write" },
                at(AT_FDCWD as u64, a[0]),
                None,
            )
        }
        #[cfg(target_arch = "x86_64")]
        libc::SYS_creat => file("create", at(AT_FDCWD as u64, a[0]), None),
        #[cfg(target_arch = "x86_64")]
        libc::SYS_rename => file("rename", at(AT_FDCWD as u64, a[0]), at(AT_FDCWD as u64, a[1])),
        #[cfg(target_arch = "x86_64")]
        libc::SYS_unlink | libc::SYS_rmdir => file("remove", at(AT_FDCWD as u64, a[0]), None),
        #[cfg(target_arch = "x86_64")]
        libc::SYS_mkdir => file("mkdir", at(AT_FDCWD as u64, a[0]), None),
        #[cfg(target_arch = "x86_64")]
        libc::SYS_link => file("link", at(AT_FDCWD as u64, a[1]), at(AT_FDCWD as u64, a[0])),
        #[cfg(target_arch = "x86_64")]
        libc::SYS_symlink => file("link", at(AT_FDCWD as u64, a[1]), path(a[0])),
        _ => None,
    }
}
