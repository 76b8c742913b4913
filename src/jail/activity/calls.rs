//! The system calls the activity filter notifies ([`super::filter`]), argument by argument: which is a path and
//! what folder it is relative to, which are flags, where a program's arguments are. `openat2`'s flags are read
//! from the caller's memory (its `struct open_how`).

use super::memory::{Memory, MemoryUnreadable};
use super::resolve::PathBase;

/// `AT_FDCWD`: a path relative to the caller's working folder.
const AT_FDCWD: i32 = -100;
/// `RESOLVE_IN_ROOT` of `struct open_how`.
const RESOLVE_IN_ROOT: u64 = 0x10;

/// A path argument: the folder it is relative to, and where its text is in the caller's memory.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Named {
    pub(crate) base: PathBase,
    pub(crate) addr: u64,
    /// Whether an empty path names the descriptor itself (`AT_EMPTY_PATH`); else the kernel refuses it.
    pub(crate) empty: bool,
}

fn named(dirfd: u64, addr: u64) -> Named {
    // The kernel reads a descriptor as an `int`.
    let fd = dirfd as u32 as i32;
    Named {
        base: if fd == AT_FDCWD {
            PathBase::Cwd
        } else {
            PathBase::Fd(fd)
        },
        addr,
        empty: false,
    }
}

/// `named` that may be empty when `flags` has `AT_EMPTY_PATH`.
fn or_empty(named: Named, flags: u64) -> Named {
    Named {
        empty: flags & libc::AT_EMPTY_PATH as u64 != 0,
        ..named
    }
}

fn cwd(addr: u64) -> Named {
    named(AT_FDCWD as u32 as u64, addr)
}

/// What a waiting call asks.
pub(crate) enum Ask {
    /// `execve`, `execveat` (`flags`: `AT_EMPTY_PATH`, `AT_SYMLINK_NOFOLLOW`).
    Exec { name: Named, argv: u64, flags: u64 },
    /// `open`, `openat`, `openat2`, `creat`: `flags` as `open`'s; `in_root` for `RESOLVE_IN_ROOT`.
    Open { name: Named, flags: u64, in_root: bool },
    /// `truncate`.
    Truncate(Named),
    /// `mkdir*`, `mknod*`: `op` a name made.
    Make { op: &'static str, name: Named },
    /// `link*`: `name` the new name, `old` the file (followed with `AT_SYMLINK_FOLLOW`).
    Link { name: Named, old: Named, follow: bool },
    /// `symlink*`: `name` the link, `text` what it says.
    Symlink { name: Named, text: u64 },
    /// `rename*`.
    Rename { from: Named, to: Named },
    /// `unlink*`, `rmdir`.
    Remove(Named),
}

/// The system call's name, for a record that could not be read.
pub(crate) fn syscall_name(nr: i64) -> &'static str {
    match nr {
        libc::SYS_execve => "execve",
        libc::SYS_execveat => "execveat",
        libc::SYS_openat => "openat",
        libc::SYS_openat2 => "openat2",
        libc::SYS_truncate => "truncate",
        libc::SYS_renameat => "renameat",
        libc::SYS_renameat2 => "renameat2",
        libc::SYS_unlinkat => "unlinkat",
        libc::SYS_mkdirat => "mkdirat",
        libc::SYS_mknodat => "mknodat",
        libc::SYS_linkat => "linkat",
        libc::SYS_symlinkat => "symlinkat",
        #[cfg(target_arch = "x86_64")]
        libc::SYS_open => "open",
        #[cfg(target_arch = "x86_64")]
        libc::SYS_creat => "creat",
        #[cfg(target_arch = "x86_64")]
        libc::SYS_rename => "rename",
        #[cfg(target_arch = "x86_64")]
        libc::SYS_unlink => "unlink",
        #[cfg(target_arch = "x86_64")]
        libc::SYS_rmdir => "rmdir",
        #[cfg(target_arch = "x86_64")]
        libc::SYS_mkdir => "mkdir",
        #[cfg(target_arch = "x86_64")]
        libc::SYS_mknod => "mknod",
        #[cfg(target_arch = "x86_64")]
        libc::SYS_link => "link",
        #[cfg(target_arch = "x86_64")]
        libc::SYS_symlink => "symlink",
        _ => "other",
    }
}

/// What the call `nr` with arguments `a` asks (`Err`: its `struct open_how` could not be read).
pub(crate) fn ask(nr: i64, a: [u64; 6], mem: &Memory) -> Result<Option<Ask>, MemoryUnreadable> {
    Ok(Some(match nr {
        libc::SYS_execve => Ask::Exec {
            name: cwd(a[0]),
            argv: a[1],
            flags: 0,
        },
        libc::SYS_execveat => Ask::Exec {
            name: or_empty(named(a[0], a[1]), a[4]),
            argv: a[2],
            flags: a[4],
        },
        libc::SYS_openat => Ask::Open {
            name: named(a[0], a[1]),
            flags: a[2],
            in_root: false,
        },
        libc::SYS_openat2 => {
            // struct open_how { u64 flags; u64 mode; u64 resolve; }, from the caller's memory.
            let how = mem.bytes::<24>(a[2])?;
            let word = |i: usize| u64::from_ne_bytes(how[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
            Ask::Open {
                name: named(a[0], a[1]),
                flags: word(0),
                in_root: word(2) & RESOLVE_IN_ROOT != 0,
            }
        }
        libc::SYS_truncate => Ask::Truncate(cwd(a[0])),
        libc::SYS_renameat | libc::SYS_renameat2 => Ask::Rename {
            from: named(a[0], a[1]),
            to: named(a[2], a[3]),
        },
        libc::SYS_unlinkat => Ask::Remove(named(a[0], a[1])),
        libc::SYS_mkdirat => Ask::Make {
            op: "mkdir",
            name: named(a[0], a[1]),
        },
        libc::SYS_mknodat => Ask::Make {
            op: "create",
            name: named(a[0], a[1]),
        },
        libc::SYS_linkat => Ask::Link {
            name: named(a[2], a[3]),
            old: or_empty(named(a[0], a[1]), a[4]),
            follow: a[4] & libc::AT_SYMLINK_FOLLOW as u64 != 0,
        },
        libc::SYS_symlinkat => Ask::Symlink {
            name: named(a[1], a[2]),
            text: a[0],
        },
        #[cfg(target_arch = "x86_64")]
        libc::SYS_open => Ask::Open {
            name: cwd(a[0]),
            flags: a[1],
            in_root: false,
        },
        #[cfg(target_arch = "x86_64")]
        libc::SYS_creat => Ask::Open {
            name: cwd(a[0]),
            flags: (libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC) as u64,
            in_root: false,
        },
        #[cfg(target_arch = "x86_64")]
        libc::SYS_rename => Ask::Rename {
            from: cwd(a[0]),
            to: cwd(a[1]),
        },
        #[cfg(target_arch = "x86_64")]
        libc::SYS_unlink | libc::SYS_rmdir => Ask::Remove(cwd(a[0])),
        #[cfg(target_arch = "x86_64")]
        libc::SYS_mkdir => Ask::Make {
            op: "mkdir",
            name: cwd(a[0]),
        },
        #[cfg(target_arch = "x86_64")]
        libc::SYS_mknod => Ask::Make {
            op: "create",
            name: cwd(a[0]),
        },
        #[cfg(target_arch = "x86_64")]
        libc::SYS_link => Ask::Link {
            name: cwd(a[1]),
            old: cwd(a[0]),
            follow: false,
        },
        #[cfg(target_arch = "x86_64")]
        libc::SYS_symlink => Ask::Symlink {
            name: cwd(a[1]),
            text: a[0],
        },
        _ => return Ok(None),
    }))
}
