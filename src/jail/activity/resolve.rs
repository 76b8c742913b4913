//! A waiting call's paths as its caller sees them: its root (`/proc/PID/root`), its working folder and
//! descriptors at the time of the call, its symbolic links read in its root (an absolute link goes to the
//! caller's `/`, not cordon's), and `/proc/self` and `/proc/thread-self` meaning the caller.
//!
//! Each component is looked up with `openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)` from the caller's root,
//! so nothing a jailed command plants (a link to `/`, `..` past its root) takes the lookup out of its file
//! system. A link of `/proc` that names a process's descriptor, folder, root or program (`/proc/self/fd/3`,
//! `/dev/fd/3`, `/proc/self/cwd`) is read as text, as the kernel names its target relative to the jail's root:
//! a file there is resolved on; a file with no name (a `memfd`, a pipe, a deleted file) is what the call names.
//! The result is a path (absolute, without `.`, `..` or links), and what it names now: there (its descriptor and
//! status), absent (and why the call will fail), a file with no name, or what cordon could not look up.

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use rustix::fs::{Mode, OFlags, ResolveFlags, Stat};
use rustix::io::Errno;

/// The most links followed in one lookup (the kernel's `MAXSYMLINKS`).
const MOST_LINKS: u32 = 40;

/// What a path names now.
pub(crate) enum PathState {
    /// It is there: an `O_PATH` descriptor of it (the link itself when not followed) and its status.
    There(OwnedFd, Stat),
    /// It is not: `ENOENT` or `ENOTDIR` (a folder of it is missing or not a folder), `ELOOP` (too many links).
    /// `parent` is its folder when only the last component is missing (a name the call may make).
    Absent {
        errno: &'static str,
        parent: Option<(OwnedFd, Stat)>,
    },
    /// A file with no name: a `memfd` (`/memfd:NAME (deleted)`), a deleted file, a pipe or socket.
    Anonymous,
    /// cordon could not look it up (why).
    Unresolved(String),
}

/// A path as the caller sees it, and what it names now.
pub(crate) struct Resolved {
    /// Absolute, without `.`, `..` or links (or, for [`PathState::Anonymous`], the kernel's name of the file).
    pub(crate) path: Vec<u8>,
    pub(crate) found: PathState,
}

/// The folder a relative path starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PathBase {
    /// The caller's working folder (`AT_FDCWD`).
    Cwd,
    /// The folder (or file) open as the caller's descriptor.
    Fd(i32),
}

/// One waiting thread's view of the file system.
pub(crate) struct ThreadView {
    /// The thread, as cordon's PID namespace numbers it.
    pub(super) tid: u32,
    /// Its process.
    pub(super) tgid: u32,
    /// Its process and thread as its own PID namespace numbers them (what its `/proc/self` names).
    ns_tgid: Vec<u8>,
    ns_tid: Vec<u8>,
    /// Its root, `O_PATH`.
    root: OwnedFd,
}

fn errno_name(e: Errno) -> &'static str {
    match e {
        Errno::NOENT => "ENOENT",
        Errno::NOTDIR => "ENOTDIR",
        Errno::LOOP => "ELOOP",
        Errno::ACCESS => "EACCES",
        Errno::PERM => "EPERM",
        Errno::SRCH => "ESRCH",
        _ => "an error",
    }
}

/// `bytes` split at `/`, empty components left out.
fn components(bytes: &[u8]) -> impl Iterator<Item = Vec<u8>> + '_ {
    bytes
        .split(|&b| b == b'/')
        .filter(|c| !c.is_empty())
        .map(<[u8]>::to_vec)
}

/// `cur` as an absolute path.
pub(crate) fn joined(cur: &[Vec<u8>]) -> Vec<u8> {
    if cur.is_empty() {
        return b"/".to_vec();
    }
    let mut out = Vec::new();
    for c in cur {
        out.push(b'/');
        out.extend_from_slice(c);
    }
    out
}

/// Whether the kernel's name of a file is no path: `pipe:[1]`, `anon_inode:[eventfd]`, `/memfd:x (deleted)`,
/// `/home/a/gone (deleted)`.
fn nameless(text: &[u8]) -> bool {
    !text.starts_with(b"/") || text.ends_with(b" (deleted)") || text.starts_with(b"/memfd:")
}

impl ThreadView {
    /// The view of the thread `tid`; `None` when its root cannot be opened (it is gone, or out of reach).
    pub(crate) fn of(tid: u32, status: &str) -> Result<ThreadView, String> {
        let root = rustix::fs::open(
            format!("/proc/{tid}/root"),
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| format!("the root of pid {tid}: {e}"))?;
        let last = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().last())
                .map(|v| v.as_bytes().to_vec())
        };
        let tgid = last("Tgid:")
            .and_then(|v| std::str::from_utf8(&v).ok()?.parse().ok())
            .unwrap_or(tid);
        Ok(ThreadView {
            tid,
            tgid,
            ns_tgid: last("NStgid:").unwrap_or_else(|| tgid.to_string().into_bytes()),
            ns_tid: last("NSpid:").unwrap_or_else(|| tid.to_string().into_bytes()),
            root,
        })
    }

    /// `path` from the caller's root, each component as given (the lookup's own step).
    fn open(&self, cur: &[Vec<u8>]) -> rustix::io::Result<OwnedFd> {
        let rel = joined(cur);
        rustix::fs::openat2(
            &self.root,
            OsStr::from_bytes(&rel),
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS,
        )
    }

    /// The text of the folder `base` names.
    fn base(&self, base: PathBase) -> Result<Vec<u8>, String> {
        match base {
            PathBase::Cwd => self.link("cwd"),
            PathBase::Fd(n) => self.link(&format!("fd/{n}")),
        }
    }

    /// `path` as the caller sees it, relative to `base`; the last component followed when it is a link and
    /// `follow`. `in_root`: `openat2`'s `RESOLVE_IN_ROOT`, `base` as `/`.
    pub(crate) fn resolve(&self, base: PathBase, path: &[u8], follow: bool, in_root: bool) -> Resolved {
        let (start, floor) = if path.starts_with(b"/") && !in_root {
            (Vec::new(), 0)
        } else {
            match self.base(base) {
                Ok(text) if !nameless(&text) => {
                    let start: Vec<Vec<u8>> = components(&text).collect();
                    let floor = if in_root { start.len() } else { 0 };
                    (start, floor)
                }
                Ok(text) => return self.textual(text, path, PathState::Unresolved("its folder has no name".into())),
                Err(why) => return self.textual(b"?".to_vec(), path, PathState::Unresolved(why)),
            }
        };
        let todo: Vec<Vec<u8>> = components(path).collect();
        if floor == 0
            && let Some(fast) = self.fast(&start, &todo, follow)
        {
            return fast;
        }
        self.walk(start, todo, floor, follow)
    }

    /// The common case in one lookup: a path with no `..` and no link on its way (`RESOLVE_NO_SYMLINKS`, which
    /// also keeps `/proc/self` and every link of `/proc` to [`ThreadView::walk`]), whose text is then its canonical
    /// path. `None` when it has either, or cannot be looked up so.
    fn fast(&self, start: &[Vec<u8>], todo: &[Vec<u8>], follow: bool) -> Option<Resolved> {
        if todo.iter().any(|c| c.as_slice() == b"..") {
            return None;
        }
        let cur: Vec<Vec<u8>> = start
            .iter()
            .chain(todo)
            .filter(|c| c.as_slice() != b".")
            .cloned()
            .collect();
        let flags = OFlags::PATH | OFlags::CLOEXEC | if follow { OFlags::empty() } else { OFlags::NOFOLLOW };
        let how = ResolveFlags::IN_ROOT | ResolveFlags::NO_SYMLINKS;
        let at = |cur: &[Vec<u8>], flags| {
            let rel = joined(cur);
            let fd = rustix::fs::openat2(&self.root, OsStr::from_bytes(&rel), flags, Mode::empty(), how)?;
            let stat = rustix::fs::fstat(&fd)?;
            Ok::<_, Errno>((fd, stat))
        };
        match at(&cur, flags) {
            Ok((fd, stat)) => Some(Resolved {
                path: joined(&cur),
                found: PathState::There(fd, stat),
            }),
            Err(Errno::NOENT) if !cur.is_empty() => {
                let (fd, stat) = at(&cur[..cur.len() - 1], OFlags::PATH | OFlags::CLOEXEC).ok()?;
                (rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::Directory).then(|| {
                    Resolved {
                        path: joined(&cur),
                        found: PathState::Absent {
                            errno: "ENOENT",
                            parent: Some((fd, stat)),
                        },
                    }
                })
            }
            Err(_) => None,
        }
    }

    /// The file the caller's descriptor `fd` names (`execveat` with `AT_EMPTY_PATH`, `fexecve`).
    pub(crate) fn fd(&self, fd: i32, follow: bool) -> Resolved {
        match self.link(&format!("fd/{fd}")) {
            Ok(text) if nameless(&text) => Resolved {
                path: text,
                found: PathState::Anonymous,
            },
            Ok(text) => self.walk(Vec::new(), components(&text).collect(), 0, follow),
            Err(why) => Resolved {
                path: format!("(descriptor {fd})").into_bytes(),
                found: PathState::Unresolved(why),
            },
        }
    }

    /// `base/path` as text, for what cannot be looked up.
    fn textual(&self, mut base: Vec<u8>, path: &[u8], found: PathState) -> Resolved {
        if !path.is_empty() {
            base.push(b'/');
            base.extend_from_slice(path);
        }
        Resolved { path: base, found }
    }

    /// Whether `cur` is the caller's `/proc` (the root of a proc file system), where `self` means the caller.
    fn is_proc(&self, cur: &[Vec<u8>]) -> bool {
        let Ok(fd) = self.open(cur) else { return false };
        let proc = rustix::fs::fstatfs(&fd).is_ok_and(|s| s.f_type == rustix::fs::PROC_SUPER_MAGIC);
        proc && rustix::fs::fstat(&fd).is_ok_and(|s| s.st_ino == 1)
    }

    /// The caller's own entry of `/proc` that `name` means, its components (`self`: its process,
    /// `thread-self`: its thread).
    fn own(&self, name: &[u8]) -> Option<Vec<Vec<u8>>> {
        match name {
            b"self" => Some(vec![self.ns_tgid.clone()]),
            b"thread-self" => Some(vec![self.ns_tgid.clone(), b"task".to_vec(), self.ns_tid.clone()]),
            _ => None,
        }
    }

    /// Resolve the components `todo` from `cur` (canonical already); `floor` components of `cur` are the root.
    fn walk(&self, mut cur: Vec<Vec<u8>>, todo: Vec<Vec<u8>>, floor: usize, follow: bool) -> Resolved {
        let mut todo: VecDeque<Vec<u8>> = todo.into();
        let mut links = 0;
        let mut here: Option<(OwnedFd, Stat)> = None;
        while let Some(c) = todo.pop_front() {
            match c.as_slice() {
                b"." => continue,
                b".." => {
                    if cur.len() > floor {
                        cur.pop();
                        // The folder's parent, which is `cur` (canonical, above the caller's root); else looked
                        // up from the root again.
                        here = here.and_then(|(dir, _)| {
                            let up = rustix::fs::openat(&dir, "..", OFlags::PATH | OFlags::CLOEXEC, Mode::empty());
                            let up = up.ok()?;
                            let stat = rustix::fs::fstat(&up).ok()?;
                            Some((up, stat))
                        });
                    }
                    continue;
                }
                _ => {}
            }
            let last = todo.iter().all(|c| c.as_slice() == b".");
            if let Some(own) = self.own(&c).filter(|_| self.is_proc(&cur)) {
                // The caller's descriptors, folder, root and program, read from cordon's /proc by its pid here.
                let mut rest: Vec<Vec<u8>> = todo.iter().cloned().collect();
                let magic = match rest.first().map(Vec::as_slice) {
                    Some(b"cwd" | b"root" | b"exe") => Some(String::from_utf8_lossy(&rest.remove(0)).into_owned()),
                    Some(b"fd") if rest.len() >= 2 => {
                        let n = String::from_utf8_lossy(&rest[1]).into_owned();
                        rest.drain(..2);
                        Some(format!("fd/{n}"))
                    }
                    _ => None,
                };
                if let Some(name) = magic {
                    match self.link(&name) {
                        Ok(text) if nameless(&text) => {
                            return self.textual(text, &joined(&rest)[1..], nameless_found(rest.is_empty()));
                        }
                        Ok(text) => {
                            links += 1;
                            if links > MOST_LINKS {
                                return Resolved {
                                    path: joined(&cur),
                                    found: PathState::Absent {
                                        errno: "ELOOP",
                                        parent: None,
                                    },
                                };
                            }
                            cur.truncate(floor);
                            todo = components(&text).chain(rest).collect();
                            here = None;
                            continue;
                        }
                        Err(why) => return self.textual(joined(&cur), &c, PathState::Unresolved(why)),
                    }
                }
                todo = own.into_iter().chain(todo).collect();
                continue;
            }
            // One name in the folder looked up last (no `/`, not `..`, not followed): it cannot leave it.
            let looked = match &here {
                Some((dir, _)) => rustix::fs::openat(
                    dir,
                    OsStr::from_bytes(&c),
                    OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                ),
                None => {
                    let mut next = cur.clone();
                    next.push(c.clone());
                    self.open(&next)
                }
            };
            cur.push(c);
            let fd = match looked {
                Ok(fd) => fd,
                Err(e) => {
                    let errno = errno_name(e);
                    let rest: Vec<Vec<u8>> = todo.into_iter().collect();
                    let path = joined(&cur.iter().cloned().chain(rest).collect::<Vec<_>>());
                    let found = match e {
                        Errno::NOENT | Errno::NOTDIR => PathState::Absent {
                            errno,
                            parent: if last {
                                here.take().or_else(|| self.parent_of(&joined(&cur)))
                            } else {
                                None
                            },
                        },
                        _ => PathState::Unresolved(format!("cannot look up {}: {e}", String::from_utf8_lossy(&path))),
                    };
                    return Resolved { path, found };
                }
            };
            let Ok(stat) = rustix::fs::fstat(&fd) else {
                return Resolved {
                    path: joined(&cur),
                    found: PathState::Unresolved("cannot stat it".into()),
                };
            };
            let kind = rustix::fs::FileType::from_raw_mode(stat.st_mode);
            if kind == rustix::fs::FileType::Symlink && (follow || !last) {
                links += 1;
                if links > MOST_LINKS {
                    return Resolved {
                        path: joined(&cur),
                        found: PathState::Absent {
                            errno: "ELOOP",
                            parent: None,
                        },
                    };
                }
                let target = match rustix::fs::readlinkat(&fd, "", Vec::new()) {
                    Ok(t) => t.into_bytes(),
                    Err(e) => {
                        return Resolved {
                            path: joined(&cur),
                            found: PathState::Unresolved(format!("cannot read the link: {e}")),
                        };
                    }
                };
                cur.pop();
                let on_proc = rustix::fs::fstatfs(&fd).is_ok_and(|s| s.f_type == rustix::fs::PROC_SUPER_MAGIC);
                if on_proc && nameless(&target) {
                    // Another process's descriptor that has no name.
                    let rest: Vec<Vec<u8>> = todo.into_iter().collect();
                    return self.textual(target, &joined(&rest)[1..], nameless_found(rest.is_empty()));
                }
                if target.starts_with(b"/") {
                    cur.truncate(floor);
                }
                todo = components(&target).chain(todo).collect();
                here = None;
                continue;
            }
            if !last && kind != rustix::fs::FileType::Directory {
                let rest: Vec<Vec<u8>> = todo.into_iter().collect();
                return Resolved {
                    path: joined(&cur.iter().cloned().chain(rest).collect::<Vec<_>>()),
                    found: PathState::Absent {
                        errno: "ENOTDIR",
                        parent: None,
                    },
                };
            }
            here = Some((fd, stat));
        }
        let found = match here {
            Some((fd, stat)) => PathState::There(fd, stat),
            None => match self.open(&cur).and_then(|fd| Ok((rustix::fs::fstat(&fd)?, fd))) {
                Ok((stat, fd)) => PathState::There(fd, stat),
                Err(e) => PathState::Unresolved(format!("cannot look it up again: {e}")),
            },
        };
        Resolved {
            path: joined(&cur),
            found,
        }
    }

    /// The folder holding `path` (absolute, as [`Resolved::path`]), to check what removing or renaming it needs.
    pub(crate) fn parent_of(&self, path: &[u8]) -> Option<(OwnedFd, Stat)> {
        let mut cur: Vec<Vec<u8>> = components(path).collect();
        cur.pop()?;
        let fd = self.open(&cur).ok()?;
        let stat = rustix::fs::fstat(fd.as_fd()).ok()?;
        Some((fd, stat))
    }
}

/// A file with no name, or something under it (which has none either).
fn nameless_found(alone: bool) -> PathState {
    if alone {
        PathState::Anonymous
    } else {
        PathState::Unresolved("under a file with no name".into())
    }
}
