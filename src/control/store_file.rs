//! The sandbox store's file before SQLite opens it: its folder must be private to cordon, and the folder and
//! file are made so before SQLite would make them with looser modes.

use std::path::Path;

/// The folder of a `control.store` file must be private to cordon ([`crate::secret_file::check_private_dir`]):
/// refused by [`super::store::Store::open`], and by `cordon check` and `cordon run` before anything starts.
pub(crate) fn check_folder(path: &Path) -> Result<(), String> {
    use crate::secret_file::{check_private_dir, folder_of};
    check_private_dir(folder_of(path), "the folder of control.store")
}

/// On unix, create the parent folder (0700) and the file (0600) before SQLite does, so that neither is ever
/// readable by others; an existing folder or file is left as it is.
#[cfg(unix)]
pub(crate) fn prepare_file(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(parent)?;
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Elsewhere, create the parent folder; SQLite creates the file.
#[cfg(not(unix))]
pub(crate) fn prepare_file(path: &Path) -> std::io::Result<()> {
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => std::fs::create_dir_all(parent),
        None => Ok(()),
    }
}
