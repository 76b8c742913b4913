//! File handling for the CA store: permission checks, atomic writes (temp file, fsync, rename), and
//! directory syncs, so a crash never leaves a certificate without its key.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use crate::tls::ca::error::{CaError, io_err};
use crate::tls::crypto::random_bytes;

pub(super) fn read_key(path: &Path) -> Result<String, CaError> {
    let mut file = File::open(path).map_err(io_err("open", path))?;
    // The mode of the file actually opened, not of whatever the path names a moment later.
    let meta = file.metadata().map_err(io_err("inspect", path))?;
    if !meta.is_file() {
        return Err(CaError::BadKey {
            path: path.to_path_buf(),
            reason: "not a regular file".into(),
        });
    }
    check_owner(path, &meta)?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        // SECURITY: a CA key other local users can read lets them mint certificates the sandbox trusts.
        return Err(CaError::KeyPermissions {
            path: path.to_path_buf(),
            mode,
        });
    }
    let mut key = String::new();
    io::Read::read_to_string(&mut file, &mut key).map_err(io_err("read", path))?;
    Ok(key)
}

pub(super) fn check_dir(dir: &Path) -> Result<(), CaError> {
    let meta = fs::symlink_metadata(dir).map_err(io_err("inspect", dir))?;
    if !meta.is_dir() {
        return Err(CaError::NotADirectory {
            path: dir.to_path_buf(),
        });
    }
    check_owner(dir, &meta)?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o022 != 0 {
        // SECURITY: whoever can write the folder can swap in a CA and key of their own, which cordon would then
        // sign with and tell the sandbox to trust.
        return Err(CaError::DirPermissions {
            path: dir.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

/// A CA's folder or key must be cordon's (or root's, who can read everything anyway).
fn check_owner(path: &Path, meta: &fs::Metadata) -> Result<(), CaError> {
    use std::os::unix::fs::MetadataExt;
    let (owner, me) = (meta.uid(), nix::unistd::geteuid().as_raw());
    if owner != me && owner != 0 {
        // SECURITY: a CA another user made, in a folder they own, would be adopted as the sandbox's: they hold
        // its key.
        return Err(CaError::Owner {
            path: path.to_path_buf(),
            owner,
            me,
        });
    }
    Ok(())
}

/// `ca.dir` itself, and every sandbox folder in it, must be private to cordon.
pub(super) fn check_folders(dir: &Path) -> Result<(), CaError> {
    crate::secret_file::check_private_dir(dir, "ca.dir").map_err(CaError::Folder)?;
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err("list", dir)(e)),
    };
    for entry in entries {
        let entry = entry.map_err(io_err("list", dir))?;
        if entry.file_type().map_err(io_err("inspect", &entry.path()))?.is_dir() {
            check_dir(&entry.path())?;
        }
    }
    Ok(())
}

/// Writes `name` in `dir` through a fresh temporary file: complete and durable once it has its name.
pub(super) fn write_file(dir: &Path, name: &str, contents: &[u8], mode: u32) -> Result<(), CaError> {
    let suffix: String = random_bytes::<8>()?.iter().map(|b| format!("{b:02x}")).collect();
    let tmp = dir.join(format!(".{name}.tmp-{suffix}"));
    let result = write_then_rename(&tmp, &dir.join(name), contents, mode);
    if result.is_err() {
        // Best effort: the error being returned matters more than a stray temporary file.
        let _ = fs::remove_file(&tmp);
    }
    result
}

pub(super) fn write_then_rename(tmp: &Path, dest: &Path, contents: &[u8], mode: u32) -> Result<(), CaError> {
    // SECURITY: the key file has mode 0600 from its creation (not chmod afterwards), so no other local user can
    // open it in between; create_new never reuses or follows an existing file.
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(tmp)
        .map_err(io_err("create", tmp))?;
    file.write_all(contents).map_err(io_err("write", tmp))?;
    file.sync_all().map_err(io_err("sync", tmp))?;
    rename(tmp, dest)
}

pub(super) fn rename(from: &Path, to: &Path) -> Result<(), CaError> {
    fs::rename(from, to).map_err(io_err("rename", from))
}

pub(super) fn sync_dir(dir: &Path) -> Result<(), CaError> {
    // Renames are durable only once the folder itself is synced.
    File::open(dir).and_then(|d| d.sync_all()).map_err(io_err("sync", dir))
}

pub(super) fn exists(path: &Path) -> Result<bool, CaError> {
    match fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(CaError::Io {
            action: "inspect",
            path: path.to_path_buf(),
            source: e,
        }),
    }
}

pub(super) fn remove_if_present(path: &Path) -> Result<(), CaError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(CaError::Io {
            action: "remove",
            path: path.to_path_buf(),
            source: e,
        }),
    }
}

/// The lock file in the CA folder that processes sharing the folder take around every load, creation and
/// rotation.
pub(super) const LOCK_FILE: &str = ".lock";

/// Takes the exclusive lock on `dir`'s lock file ([`crate::file_lock`]), creating the folder if needed.
///
/// Without it, two replicas meeting a new sandbox at once would each generate a CA and install it over the
/// other's: a replica could then sign with a CA that is no longer the one on disk, which is the one the
/// sandbox is told to trust.
pub(super) fn lock_folder(dir: &Path) -> Result<Option<File>, CaError> {
    // SECURITY: the folder is private from its creation (mode 0700), like the sandboxes' folders in it.
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io_err("create", dir))?;
    crate::secret_file::check_private_dir(dir, "ca.dir").map_err(CaError::Folder)?;
    let path = dir.join(LOCK_FILE);
    crate::file_lock::exclusive(&path).map_err(io_err("lock", &path))
}
