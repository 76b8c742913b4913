//! The caller's links in `/proc` (`cwd`, `root`, `exe`, `fd/N`), read from cordon's side: the text the kernel
//! gives for their targets, relative to the caller's root (a file with no name as `/memfd:NAME (deleted)`,
//! `pipe:[N]`).

use super::resolve::ThreadView;

impl ThreadView {
    /// What the caller's `/proc/PID/NAME` link reads (`cwd`, `root`, `exe`, `fd/N`), as the kernel names its
    /// target relative to the caller's root. A descriptor cordon may not read through `/proc` (the caller was
    /// made non-dumpable, and cordon runs without root) is copied with `pidfd_getfd`, which asks only the ptrace
    /// access check.
    pub(crate) fn link(&self, name: &str) -> Result<Vec<u8>, String> {
        match rustix::fs::readlink(format!("/proc/{}/{name}", self.tid), Vec::new()) {
            Ok(t) => Ok(t.into_bytes()),
            Err(e) => {
                let Some(fd) = name.strip_prefix("fd/").and_then(|n| n.parse::<i32>().ok()) else {
                    return Err(format!("/proc/{}/{name}: {e}", self.tid));
                };
                self.copied_fd(fd)
                    .map_err(|e2| format!("descriptor {fd} of pid {}: {e}, {e2}", self.tid))
            }
        }
    }

    fn copied_fd(&self, fd: i32) -> Result<Vec<u8>, String> {
        use rustix::process::{Pid, PidfdFlags, PidfdGetfdFlags, pidfd_getfd, pidfd_open};
        let pid = i32::try_from(self.tgid).ok().and_then(Pid::from_raw).ok_or("no pid")?;
        let pidfd = pidfd_open(pid, PidfdFlags::empty()).map_err(|e| e.to_string())?;
        let copy = pidfd_getfd(&pidfd, fd, PidfdGetfdFlags::empty()).map_err(|e| e.to_string())?;
        let fd = std::os::fd::AsRawFd::as_raw_fd(&copy);
        rustix::fs::readlink(format!("/proc/self/fd/{fd}"), Vec::new())
            .map(|t| t.into_bytes())
            .map_err(|e| e.to_string())
    }
}
