//! Exclusive locks between processes that share files: replicas sharing a CA folder, and `cordon vault`
//! commands editing one vault. A lock is `flock(2)` on a lock file beside what it guards, so a process
//! that dies releases it with its files.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Takes the exclusive lock on the file `path` (created empty, 0600, if missing), waiting while another
/// process holds it; released when the returned file is dropped.
///
/// `Ok(None)` where this process may not create the lock file (a read-only file system or folder): such a
/// process can only read, and every file cordon writes appears whole, so reading needs no lock.
pub(crate) fn exclusive(path: &Path) -> io::Result<Option<File>> {
    // SECURITY: never through a symbolic link, so whoever can write the folder cannot have cordon create
    // or hold a file elsewhere; nothing is ever written to it.
    let opened = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path);
    let file = match opened {
        Ok(file) => file,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::ReadOnlyFilesystem | io::ErrorKind::PermissionDenied
            ) =>
        {
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    file.lock()?;
    Ok(Some(file))
}

#[cfg(test)]
#[path = "file_lock_tests.rs"]
mod tests;
