//! What a waiting system call of a jailed command does, read from the kernel's notification, the caller's memory
//! ([`super::memory`]) and its view of the file system ([`super::resolve`]): a program started (its path,
//! arguments, folder, pid, parent, uid) or a file written, created, renamed or removed (its path, as the command
//! sees its file system), and whether the kernel will refuse it ([`super::outcome`]).
//!
//! All of it is read while the call waits ([`event`]): its strings from its memory (another thread of the caller
//! could change them in between, so what a record says is what the caller asked when cordon looked,
//! seccomp_unotify(2)), its paths resolved in its root from its folder. Once the call went on, the caller may be
//! gone (a short-lived `mkdir` exits at once), and with it its folder and `/proc` entries. What cannot be read is
//! recorded as unreadable (with the system call and pid), never left out.

use cordon_unotify::Notification;

use super::calls::{Ask, Named, ask, syscall_name};
use super::memory::Memory;
use super::outcome::{self, CallerCreds};
use super::resolve::{PathBase, PathState, Resolved, ThreadView};

/// The longest path read.
const MOST_PATH: usize = 4096;
/// The most arguments of a program recorded.
const MOST_ARGS: usize = 256;
/// The most bytes of arguments recorded in all.
const MOST_ARG_BYTES: usize = 16 * 1024;
/// `O_TMPFILE` without its `O_DIRECTORY`.
const TMPFILE: u64 = 0o20_000_000;

/// What one call did (or asked, for an attempt the kernel refuses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallEvent {
    /// A program started.
    Exec {
        path: String,
        argv: Vec<String>,
        /// Whether `argv` was cut short ([`MOST_ARGS`], [`MOST_ARG_BYTES`]).
        truncated: bool,
        cwd: String,
        pid: u32,
        /// The parent (none where it is not known: under gVisor).
        ppid: Option<u32>,
        uid: u32,
        /// A program with no path: a `memfd` or a deleted file.
        anonymous: bool,
        /// The error the kernel answers, when cordon saw it would refuse.
        error: Option<&'static str>,
        /// Why what the call names could not be read.
        unreadable: Option<String>,
    },
    /// A file written, made, renamed or removed.
    File {
        op: &'static str,
        path: String,
        /// For a rename or link: where to.
        to: Option<String>,
        pid: u32,
        error: Option<&'static str>,
        unreadable: Option<String>,
        /// The system call.
        syscall: &'static str,
    },
}

/// Whether `open`'s `flags` write: `O_WRONLY`, `O_RDWR`, `O_CREAT`, `O_TRUNC` (or `O_TMPFILE`, which needs one),
/// without `O_PATH`.
pub(super) fn opens_for_writing(flags: u64) -> bool {
    let flags = flags as u32 as i32;
    if flags & libc::O_PATH != 0 {
        // The kernel ignores every other flag of an O_PATH open: it neither reads nor writes.
        return false;
    }
    flags & libc::O_ACCMODE != libc::O_RDONLY || flags & (libc::O_CREAT | libc::O_TRUNC) != 0
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// One waiting call, as read: its memory, its view and credentials.
struct WaitingCall {
    mem: Memory,
    view: Result<ThreadView, String>,
    who: CallerCreds,
    status: String,
    pid: u32,
}

/// A path the caller named: resolved, or why not.
type Looked = Result<Resolved, String>;

impl WaitingCall {
    /// The path `named` names, resolved (`follow`: its last link followed).
    fn look(&self, named: Named, follow: bool, in_root: bool) -> Looked {
        let (bytes, cut) = self.mem.string(named.addr, MOST_PATH).map_err(|u| u.0)?;
        if cut {
            return Err(format!("a path longer than {MOST_PATH} bytes"));
        }
        let view = match &self.view {
            Ok(v) => v,
            Err(why) => {
                return Ok(Resolved {
                    path: bytes,
                    found: PathState::Unresolved(why.clone()),
                });
            }
        };
        if bytes.is_empty() {
            return Ok(match named.base {
                // AT_EMPTY_PATH: the descriptor itself.
                PathBase::Fd(fd) if named.empty => view.fd(fd, follow),
                PathBase::Cwd if named.empty => view.resolve(PathBase::Cwd, b".", follow, false),
                // Else the kernel refuses an empty path.
                _ => Resolved {
                    path: Vec::new(),
                    found: PathState::Absent {
                        errno: "ENOENT",
                        parent: None,
                    },
                },
            });
        }
        Ok(view.resolve(named.base, &bytes, follow, in_root))
    }

    /// The record of a file operation on `looked`, the error from `judge` when it is there.
    fn file(
        &self,
        syscall: &'static str,
        op: &'static str,
        looked: Looked,
        to: Option<String>,
        judge: impl FnOnce(&PathState) -> Option<&'static str>,
    ) -> CallEvent {
        let (path, error, unreadable) = match looked {
            Ok(r) => {
                let error = judge(&r.found);
                let unreadable = match &r.found {
                    PathState::Unresolved(why) => Some(why.clone()),
                    _ => None,
                };
                (text(&r.path), error, unreadable)
            }
            Err(why) => ("?".into(), None, Some(why)),
        };
        CallEvent::File {
            op,
            path,
            to,
            pid: self.pid,
            error,
            unreadable,
            syscall,
        }
    }

    /// A new name the call makes (`mkdir`, `mknod`, `link`, `symlink`, `open` with `O_CREAT|O_EXCL`).
    fn making(&self, found: &PathState) -> Option<&'static str> {
        match found {
            PathState::There(..) => Some("EEXIST"),
            PathState::Absent {
                errno: "ENOENT",
                parent: Some((fd, st)),
            } => outcome::naming(&self.who, fd, st),
            PathState::Absent { errno, .. } => Some(errno),
            PathState::Anonymous | PathState::Unresolved(_) => None,
        }
    }

    /// A name the call removes or renames.
    fn removing(&self, found: &PathState, path: &[u8]) -> Option<&'static str> {
        match found {
            PathState::There(..) => {
                let (fd, st) = self.view.as_ref().ok()?.parent_of(path)?;
                outcome::naming(&self.who, fd, &st)
            }
            PathState::Absent { errno, .. } => Some(errno),
            PathState::Anonymous | PathState::Unresolved(_) => None,
        }
    }

    fn open(&self, syscall: &'static str, name: Named, flags: u64, in_root: bool) -> Option<CallEvent> {
        if !opens_for_writing(flags) {
            return None;
        }
        let f = flags as u32 as i32;
        let (create, excl) = (f & libc::O_CREAT != 0, f & libc::O_EXCL != 0);
        let follow = f & libc::O_NOFOLLOW == 0 && !(create && excl);
        let looked = self.look(name, follow, in_root);
        if flags & TMPFILE != 0 {
            // An unnamed file in the folder (it may get a name later, by linkat: recorded then).
            let looked = looked.map(|mut r| {
                r.path.extend_from_slice(b"/(unnamed)");
                r
            });
            return Some(self.file(syscall, "create", looked, None, |found| match found {
                PathState::There(fd, st) => outcome::naming(&self.who, fd, st),
                PathState::Absent { errno, .. } => Some(errno),
                _ => None,
            }));
        }
        let there = matches!(
            looked,
            Ok(Resolved {
                found: PathState::There(..),
                ..
            })
        );
        let op = if create && (!there || excl) { "create" } else { "write" };
        Some(self.file(syscall, op, looked, None, |found| match found {
            PathState::There(..) if create && excl => Some("EEXIST"),
            PathState::There(_, st) if !follow && rustix::fs::FileType::from_raw_mode(st.st_mode).is_symlink() => {
                Some("ELOOP")
            }
            PathState::There(fd, st) => outcome::writing(&self.who, fd, st),
            _ if create => self.making(found),
            PathState::Absent { errno, .. } => Some(errno),
            _ => None,
        }))
    }

    fn exec(&self, name: Named, argv: u64, flags: u64) -> CallEvent {
        let follow = flags & libc::AT_SYMLINK_NOFOLLOW as u64 == 0;
        let looked = self.look(name, follow, false);
        let (argv, truncated) = self.mem.strings(argv, MOST_ARGS, MOST_ARG_BYTES);
        let (mut anonymous, mut error, mut unreadable) = (false, None, None);
        let path = match looked {
            Ok(r) => {
                match &r.found {
                    PathState::There(_, st)
                        if !follow && rustix::fs::FileType::from_raw_mode(st.st_mode).is_symlink() =>
                    {
                        error = Some("ELOOP");
                    }
                    PathState::There(fd, st) => error = outcome::running(&self.who, fd, st),
                    PathState::Absent { errno, .. } => error = Some(errno),
                    PathState::Anonymous => anonymous = true,
                    PathState::Unresolved(why) => unreadable = Some(why.clone()),
                }
                text(&r.path)
            }
            Err(why) => {
                unreadable = Some(why);
                "?".into()
            }
        };
        let field = |name: &str| {
            self.status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .unwrap_or(0)
        };
        let cwd = match &self.view {
            Ok(v) => v.link("cwd").map_or_else(|_| "?".into(), |c| text(&c)),
            Err(_) => "?".into(),
        };
        CallEvent::Exec {
            path,
            argv,
            truncated,
            cwd,
            pid: self.pid,
            ppid: Some(field("PPid:")),
            uid: field("Uid:"),
            anonymous,
            error,
            unreadable,
        }
    }
}

/// What the waiting call `n` does, if it is one cordon records: read now, while it waits.
pub(crate) fn event(n: &Notification) -> Option<CallEvent> {
    let nr = i64::from(n.nr);
    let syscall = syscall_name(nr);
    let mem = Memory::of(n.pid);
    let status = std::fs::read_to_string(format!("/proc/{}/status", n.pid)).unwrap_or_default();
    let asked = ask(nr, n.args, &mem);
    let caller = WaitingCall {
        view: ThreadView::of(n.pid, &status),
        who: CallerCreds::of(&status),
        status,
        mem,
        pid: n.pid,
    };
    let ask = match asked {
        Ok(Some(a)) => a,
        Ok(None) => return None,
        Err(why) => {
            return Some(caller.file(syscall, "write", Err(why.0), None, |_| None));
        }
    };
    Some(match ask {
        Ask::Exec { name, argv, flags } => caller.exec(name, argv, flags),
        Ask::Open { name, flags, in_root } => return caller.open(syscall, name, flags, in_root),
        Ask::Truncate(name) => {
            let looked = caller.look(name, true, false);
            caller.file(syscall, "write", looked, None, |found| match found {
                PathState::There(fd, st) => outcome::writing(&caller.who, fd, st),
                PathState::Absent { errno, .. } => Some(errno),
                _ => None,
            })
        }
        Ask::Make { op, name } => {
            let looked = caller.look(name, false, false);
            caller.file(syscall, op, looked, None, |found| caller.making(found))
        }
        Ask::Link { name, old, follow } => {
            let to = caller.look(old, follow, false);
            let old_error = match &to {
                Ok(Resolved {
                    found: PathState::Absent { errno, .. },
                    ..
                }) => Some(*errno),
                _ => None,
            };
            let to = Some(to.map_or_else(|_| "?".into(), |r| text(&r.path)));
            let looked = caller.look(name, false, false);
            caller.file(syscall, "link", looked, to, |found| {
                old_error.or_else(|| caller.making(found))
            })
        }
        Ask::Symlink { name, text: at } => {
            let to = caller
                .mem
                .string(at, MOST_PATH)
                .map_or_else(|_| "?".into(), |(t, _)| text(&t));
            let looked = caller.look(name, false, false);
            caller.file(syscall, "link", looked, Some(to), |found| caller.making(found))
        }
        Ask::Rename { from, to } => {
            let to = caller
                .look(to, false, false)
                .map_or_else(|_| "?".into(), |r| text(&r.path));
            let looked = caller.look(from, false, false);
            let path = looked.as_ref().map(|r| r.path.clone()).unwrap_or_default();
            caller.file(syscall, "rename", looked, Some(to), |found| {
                caller.removing(found, &path)
            })
        }
        Ask::Remove(name) => {
            let looked = caller.look(name, false, false);
            let path = looked.as_ref().map(|r| r.path.clone()).unwrap_or_default();
            caller.file(syscall, "remove", looked, None, |found| caller.removing(found, &path))
        }
    })
}
