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

#[cfg(test)]
#[path = "secret_file_tests.rs"]
mod tests;
