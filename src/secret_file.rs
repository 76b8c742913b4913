//! Files holding secrets, written whole: the ones cordon fills once with a fresh secret the first time it
//! needs one (the admin token, the signing key, the file vault's key and the placeholder key), and the
//! file vault itself, which each edit replaces.
//!
//! Such a file appears whole or not at all. The secret is written and synced under a temporary name in the
//! same folder (created 0600), then moved into place without replacing anything. Processes starting
//! together on a shared folder (replicas) all end up reading the one value that was placed first, and none
//! ever reads an empty or half-written file.

use std::io::{ErrorKind, Write};
use std::path::Path;

/// Create `path` holding `contents` (mode 0600; a missing folder is created 0700) unless it exists.
/// `Ok(true)` if this call placed it, `Ok(false)` if it was there already or another process placed
/// it first: read it then.
pub(crate) fn create_once(path: &Path, contents: &[u8]) -> std::io::Result<bool> {
    if path.exists() {
        return Ok(false);
    }
    let (f, dir) = written_aside(path, contents)?;
    match f.persist_noclobber(path) {
        Ok(_) => sync_dir(dir).map(|()| true),
        // Another process placed it first: theirs stands, ours goes with the temporary file.
        Err(e) if e.error.kind() == ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e.error),
    }
}

/// Replace `path` (or create it) with `contents`, mode 0600: a reader, or a crash, sees the old file or
/// the new one, never a mix.
pub(crate) fn replace(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let (f, dir) = written_aside(path, contents)?;
    f.persist(path).map_err(|e| e.error)?;
    sync_dir(dir)
}

/// `contents` written and synced to a fresh temporary file beside `path` (its folder created 0700 if
/// missing), not yet under its name; the file is removed if it is dropped unplaced.
fn written_aside<'p>(path: &'p Path, contents: &[u8]) -> std::io::Result<(tempfile::NamedTempFile, &'p Path)> {
    let dir = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => {
            let mut b = std::fs::DirBuilder::new();
            b.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
            b.create(dir)?;
            dir
        }
        None => Path::new("."),
    };
    // SECURITY: tempfile creates the file 0600 (on Unix) and never opens an existing one (O_EXCL), so the
    // secret is never readable by others, not even before it has its name, and no planted link is followed.
    let mut f = tempfile::NamedTempFile::new_in(dir)?;
    f.write_all(contents)?;
    f.as_file().sync_all()?;
    Ok((f, dir))
}

/// A new name is durable once its folder is synced.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// `n` random bytes, hex-encoded.
pub(crate) fn random_hex(n: usize) -> Result<String, String> {
    use ring::rand::SecureRandom;
    let mut bytes = vec![0u8; n];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| "the system random generator failed".to_string())?;
    Ok(hex::encode(bytes))
}

/// Create a secret file with a fresh random value (0600, in a 0700 folder) unless it exists, whole or not
/// at all ([`crate::secret_file`]). Returns whether this call created it.
pub(crate) fn ensure_secret_file(path: &Path) -> Result<bool, String> {
    let value = format!("{}\n", random_hex(32)?);
    create_once(path, value.as_bytes()).map_err(|e| format!("cannot create the secret file {}: {e}", path.display()))
}

/// Whether the folder `dir` (a symbolic link is followed) may hold what cordon keeps private: it must be owned
/// by cordon's user (or by root, who can read everything anyway) and writable by nobody else. `what` names it
/// in the error, which says how to fix it. A folder that does not exist passes (cordon creates it, 0700).
pub(crate) fn check_private_dir(dir: &Path, what: &str) -> Result<(), String> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let meta = match std::fs::metadata(dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("{what} {}: cannot inspect it: {e}", dir.display())),
    };
    if !meta.is_dir() {
        return Err(format!("{what} {} is not a folder", dir.display()));
    }
    let me = nix::unistd::geteuid().as_raw();
    let (owner, mode) = (meta.uid(), meta.permissions().mode() & 0o7777);
    // SECURITY: whoever owns or can write the folder can put files of their choosing in it (a CA and key
    // cordon would sign with, a store that forgot revocations, a vault of their secrets).
    if owner != me && owner != 0 {
        return Err(format!(
            "{what} {} belongs to uid {owner}, not to cordon's user (uid {me}): another user could have put \
             files in it. If they are yours, run `chown -R {me} {}`; otherwise remove the folder",
            dir.display(),
            dir.display()
        ));
    }
    if mode & 0o022 != 0 {
        return Err(format!(
            "{what} {} is writable by group or others (mode {mode:04o}): another user could put files in it. \
             Run `chmod go-w {}` (cordon makes its folders 0700), or use a folder of cordon's own",
            dir.display(),
            dir.display()
        ));
    }
    Ok(())
}

/// The folder `path` is in (`.` for a bare file name).
pub(crate) fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

#[cfg(test)]
#[path = "secret_file_tests.rs"]
mod tests;
