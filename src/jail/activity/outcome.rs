//! Whether the kernel will refuse a call cordon lets go. cordon answers a waiting call before the kernel runs it
//! (seccomp user notification lets it go on, `SECCOMP_USER_NOTIF_FLAG_CONTINUE`), so it never sees the call's
//! result; what it does see, while the call waits, is what refuses it for certain: a name that is not there
//! (`ENOENT`, `ENOTDIR`, `ELOOP`) or already is (`EEXIST`), a read-only mount (`EROFS`), a mode that lets the
//! caller's file-system uid and groups neither write nor search (`EACCES`), a folder opened for writing
//! (`EISDIR`), a program on a `noexec` mount or without an execute bit (`EACCES`). Such a call is recorded as an
//! attempt with that error. What it cannot see (an ACL that denies what the mode allows, a security module, a
//! full disk, a race with another process) leaves the record saying the call was made, not that it worked.

use std::os::fd::AsFd;

use rustix::fs::{FileType, Stat, StatVfsMountFlags};

/// `CAP_DAC_OVERRIDE`: a caller with it passes the mode checks.
const CAP_DAC_OVERRIDE: u64 = 1 << 1;
/// Write and search (execute) in a mode's three bits.
const W: u32 = 0o2;
const X: u32 = 0o1;

/// Whose call: the credentials the kernel checks files against.
pub(crate) struct CallerCreds {
    fsuid: u32,
    fsgid: u32,
    groups: Vec<u32>,
    /// A caller with `CAP_DAC_OVERRIDE` (or whose capabilities cordon could not read) is not judged by modes.
    privileged: bool,
}

impl CallerCreds {
    /// From the caller's `/proc/PID/status`.
    pub(crate) fn of(status: &str) -> CallerCreds {
        let field = |name: &str| status.lines().find_map(|l| l.strip_prefix(name)).unwrap_or("");
        let nth = |name: &str, i: usize| field(name).split_whitespace().nth(i).and_then(|v| v.parse().ok());
        let caps = u64::from_str_radix(field("CapEff:").trim(), 16).ok();
        let (fsuid, fsgid) = (nth("Uid:", 3), nth("Gid:", 3));
        CallerCreds {
            fsuid: fsuid.unwrap_or(0),
            fsgid: fsgid.unwrap_or(0),
            groups: field("Groups:")
                .split_whitespace()
                .filter_map(|g| g.parse().ok())
                .collect(),
            privileged: caps.is_none_or(|c| c & CAP_DAC_OVERRIDE != 0) || fsuid.is_none() || fsgid.is_none(),
        }
    }

    /// Whether the mode of `st` may give the caller `want` (bits of [`W`], [`X`]). Only "no" is certain: with
    /// an ACL, the group bits are its mask, which bounds every named entry, so a caller who is not the owner and
    /// whom neither the group nor the other bits allow is refused whatever the ACL says.
    fn may(&self, st: &Stat, want: u32) -> bool {
        if self.privileged {
            return true;
        }
        let mode = st.st_mode;
        if self.fsuid == st.st_uid {
            return (mode >> 6) & want == want;
        }
        let group = (mode >> 3) & want == want;
        if self.fsgid == st.st_gid || self.groups.contains(&st.st_gid) {
            return group;
        }
        group || mode & want == want
    }
}

fn read_only(fd: impl AsFd) -> bool {
    rustix::fs::fstatvfs(fd).is_ok_and(|v| v.f_flag.contains(StatVfsMountFlags::RDONLY))
}

/// Opening or truncating the existing `st` (open as `fd`) for writing.
pub(crate) fn writing(who: &CallerCreds, fd: impl AsFd, st: &Stat) -> Option<&'static str> {
    let kind = FileType::from_raw_mode(st.st_mode);
    if kind == FileType::Directory {
        return Some("EISDIR");
    }
    // Devices, pipes and sockets are written on a read-only mount all the same.
    let on_disk = matches!(kind, FileType::RegularFile | FileType::Symlink);
    if on_disk && read_only(fd) {
        return Some("EROFS");
    }
    (!who.may(st, W)).then_some("EACCES")
}

/// A new name in the folder `st` (open as `fd`), or one removed from it.
pub(crate) fn naming(who: &CallerCreds, fd: impl AsFd, st: &Stat) -> Option<&'static str> {
    if read_only(fd) {
        return Some("EROFS");
    }
    (!who.may(st, W | X)).then_some("EACCES")
}

/// Running the program `st` (open as `fd`).
pub(crate) fn running(who: &CallerCreds, fd: impl AsFd, st: &Stat) -> Option<&'static str> {
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Some("EACCES");
    }
    if rustix::fs::fstatvfs(fd).is_ok_and(|v| v.f_flag.contains(StatVfsMountFlags::NOEXEC)) {
        return Some("EACCES");
    }
    (!who.may(st, X)).then_some("EACCES")
}

#[cfg(test)]
#[path = "outcome_tests.rs"]
mod tests;
