//! What a waiting system call of a jailed command did, read from the kernel's notification and the caller's
//! memory and `/proc` entries: a program started (its path, arguments, folder, pid, parent, uid) or a file
//! written, created, renamed or removed (its path, as the command sees its file system).
//!
//! All of it is read while the call waits ([`Reader::event`]): its strings from its memory (another thread of the
//! caller could change them in between, so what a record says is what the caller asked when cordon looked,
//! seccomp_unotify(2)), its paths resolved against its folder, and what it names checked to be there. Once the
//! call went on, the caller may be gone (a short-lived `mkdir` exits at once), and with it its folder and `/proc`
//! entries: a record made from them afterwards would be lost or wrong.

use std::collections::HashMap;
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
                // A memory whose process has gone (or started another program) reads nothing at all.
                if out.is_empty() {
                    return None;
                }
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

/// A path argument: the folder it is relative to (`dirfd`, or [`AT_FDCWD`]) and the path as given.
#[derive(Debug, Clone)]
struct Named(i64, String);

/// What a waiting call asks, as read from its memory.
#[derive(Debug)]
enum What {
    Exec {
        name: Named,
        argv: Vec<String>,
        truncated: bool,
    },
    /// `to` is a path for a rename or link, a link's text for a symlink (`linked`).
    File {
        op: &'static str,
        path: Named,
        to: Option<Named>,
        linked: Option<String>,
    },
}

/// Reads waiting calls, keeping each caller's memory open while it lives.
#[derive(Default)]
pub(crate) struct Reader {
    mems: HashMap<u32, Memory>,
}

impl Reader {
    /// The caller's memory, opened once.
    fn mem(&mut self, pid: u32) -> Option<&Memory> {
        if self.mems.len() > 256 {
            self.mems.clear();
        }
        match self.mems.entry(pid) {
            std::collections::hash_map::Entry::Occupied(e) => Some(e.into_mut()),
            std::collections::hash_map::Entry::Vacant(e) => Some(e.insert(Memory::open(pid)?)),
        }
        .map(|m| &*m)
    }

    /// What the waiting call `n` does, if it is one cordon records: read now, while it waits. A call on what is
    /// not there (it will fail) is not recorded.
    pub(crate) fn event(&mut self, n: &Notification) -> Option<Event> {
        let first = self.read(n);
        // A memory opened before the caller started another program reads nothing: open it again, once.
        let what = match first {
            Some(w) => w,
            None => {
                self.mems.remove(&n.pid);
                self.read(n)?
            }
        };
        let pid = n.pid;
        match what {
            What::Exec { name, argv, truncated } => {
                let path = resolve(pid, &name);
                if !there(pid, &path, false) {
                    return None;
                }
                let (ppid, uid) = parent_and_uid(pid);
                let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap_or_else(|_| PathBuf::from("?"));
                Some(Event::Exec {
                    path,
                    argv,
                    truncated,
                    cwd: cwd.to_string_lossy().into_owned(),
                    pid,
                    ppid,
                    uid,
                })
            }
            What::File { op, path, to, linked } => {
                let path = resolve(pid, &path);
                if !there(pid, &path, matches!(op, "create" | "mkdir" | "link")) {
                    return None;
                }
                let to = to.map(|t| resolve(pid, &t)).or(linked);
                Some(Event::File { op, path, to, pid })
            }
        }
    }

    fn read(&mut self, n: &Notification) -> Option<What> {
        let mem = self.mem(n.pid)?;
        let nr = i64::from(n.nr);
        let a = n.args;
        let path = |addr: u64| mem.string(addr, MOST_PATH);
        let named = |dirfd: u64, addr: u64| Some(Named(dirfd as i64 as i32 as i64, path(addr)?));
        let cwd = |addr: u64| named(AT_FDCWD as u64, addr);
        let file = |op: &'static str, path: Option<Named>, to: Option<Named>, linked: Option<String>| {
            Some(What::File {
                op,
                path: path?,
                to,
                linked,
            })
        };
        let opened = |flags: u64| {
            if (flags as i32 & libc::O_CREAT) != 0 {
                "create"
            } else {
                "write"
            }
        };
        match nr {
            libc::SYS_execve | libc::SYS_execveat => {
                let (name, args) = if nr == libc::SYS_execve {
                    (cwd(a[0]), a[1])
                } else {
                    (named(a[0], a[1]), a[2])
                };
                let (argv, truncated) = mem.strings(args);
                Some(What::Exec {
                    name: name?,
                    argv,
                    truncated,
                })
            }
            libc::SYS_openat => file(opened(a[2]), named(a[0], a[1]), None, None),
            libc::SYS_openat2 => file("write", named(a[0], a[1]), None, None),
            libc::SYS_truncate => file("write", cwd(a[0]), None, None),
            libc::SYS_renameat | libc::SYS_renameat2 => file("rename", named(a[0], a[1]), named(a[2], a[3]), None),
            libc::SYS_unlinkat => file("remove", named(a[0], a[1]), None, None),
            libc::SYS_mkdirat => file("mkdir", named(a[0], a[1]), None, None),
            libc::SYS_linkat => file("link", named(a[2], a[3]), named(a[0], a[1]), None),
            libc::SYS_symlinkat => file("link", named(a[1], a[2]), None, path(a[0])),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_open => file(opened(a[1]), cwd(a[0]), None, None),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_creat => file("create", cwd(a[0]), None, None),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_rename => file("rename", cwd(a[0]), cwd(a[1]), None),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_unlink | libc::SYS_rmdir => file("remove", cwd(a[0]), None, None),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_mkdir => file("mkdir", cwd(a[0]), None, None),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_link => file("link", cwd(a[1]), cwd(a[0]), None),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_symlink => file("link", cwd(a[1]), None, path(a[0])),
            _ => None,
        }
    }
}

/// `named` as the caller meant it: absolute as given, else under the folder its `dirfd` names (its working
/// folder for `AT_FDCWD`).
fn resolve(pid: u32, named: &Named) -> String {
    let Named(dirfd, path) = named;
    if path.starts_with('/') {
        return path.clone();
    }
    let base = if *dirfd == AT_FDCWD {
        std::fs::read_link(format!("/proc/{pid}/cwd"))
    } else {
        std::fs::read_link(format!("/proc/{pid}/fd/{dirfd}"))
    };
    match base {
        Ok(base) => Path::new(&base).join(path).to_string_lossy().into_owned(),
        Err(_) => path.clone(),
    }
}
