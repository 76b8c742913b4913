//! Per-sandbox certificate authorities for TLS interception.
//!
//! Every sandbox gets a CA of its own, so that a CA key that leaks, or a CA certificate that one sandbox was told
//! to trust, gives nothing over any other sandbox: a leaf minted by sandbox A's CA fails verification in a client
//! that trusts only sandbox B's CA. A CA can further be limited by RFC 5280 name constraints ([`Scope`]) to the
//! names its sandbox's policy allows, so that even a stolen CA key cannot sign for anything else.
//!
//! # On disk
//!
//! `<dir>/<sandbox>/ca.pem` (the certificate, PEM) and `<dir>/<sandbox>/ca.key` (its PKCS#8 key, PEM, mode 0600),
//! in a folder of mode 0700. Every load, creation and rotation holds the exclusive lock (`flock`) on
//! `<dir>/.lock`, so processes sharing the folder (replicas, `cordon ca export` beside a live proxy) make one CA
//! per sandbox between them and never meet a half-installed pair. [`CaStore`] never regenerates an existing CA:
//! a broken one is refused with an error that says what to do, and only [`CaStore::rotate`] replaces it.
//!
//! # Installing a new pair
//!
//! Creation and rotation write `ca.pem.new` and then `ca.key.new` (each through a temporary file that is fsynced
//! and renamed, so a file with one of these names is always complete), fsync the folder, and only then rename
//! `ca.key.new` over `ca.key` and `ca.pem.new` over `ca.pem`. Whenever a `.new` file is found on load, the pair
//! made of the `.new` files (falling back to the live file where there is no `.new` one) is installed if its
//! certificate and key match, and the `.new` files are discarded if they do not. So a crash never leaves a
//! certificate without its key: an interrupted installation is either completed or undone on the next load.
//!
//! Rotation keeps the previous certificate as `ca.pem.old` (public, useful to tell sandboxes which CA to stop
//! trusting) but not the previous key: renaming the new key over it unlinks it, since a CA that was rotated
//! (possibly because it leaked) must not stay usable.
//!
//! # Validity
//!
//! A CA is valid from one hour before its creation (clock skew between cordon and the sandboxes) for
//! [`CA_VALIDITY_DAYS`](crate::tls::ca::sandbox_ca::CA_VALIDITY_DAYS) days, about ten years: it is a private root that lives as long as its sandbox, and
//! rotation is explicit. An expired CA is refused on load.

use std::fmt;
use std::fs::{self, DirBuilder};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::locks::Unpoisoned;
use crate::names::SandboxId;
use crate::tls::ca::error::{CaError, io_err};
use crate::tls::ca::files::*;
use crate::tls::ca::sandbox_ca::{SandboxCa, generate};
use crate::tls::scope::Scope;

const CERT_FILE: &str = "ca.pem";
const KEY_FILE: &str = "ca.key";
const NEW_CERT_FILE: &str = "ca.pem.new";
const NEW_KEY_FILE: &str = "ca.key.new";
const OLD_CERT_FILE: &str = "ca.pem.old";

/// The longest sandbox id accepted.
const MAX_SANDBOX_ID_LEN: usize = 64;

/// The command line that rotates a sandbox's CA, from its id (see [`CaStore::with_rotate_command`]).
pub(crate) type RotateCommand = Arc<dyn Fn(&SandboxId) -> String + Send + Sync>;

/// The CAs of all sandboxes, one folder each under one directory.
pub struct CaStore {
    dir: PathBuf,
    /// Serializes file operations within this process: two connections of a new sandbox must not both create
    /// its CA. Other processes sharing the folder are held off by its lock file (see [`lock_folder`]).
    lock: Mutex<()>,
    /// What errors and hints print as the remedy for a sandbox's broken CA.
    rotate_command: RotateCommand,
}

impl fmt::Debug for CaStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CaStore")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl CaStore {
    /// A store keeping each sandbox's CA in `dir/<sandbox>/`. Nothing is touched until first use.
    pub fn new(dir: impl Into<PathBuf>) -> CaStore {
        CaStore {
            dir: dir.into(),
            lock: Mutex::new(()),
            rotate_command: Arc::new(|id| format!("cordon ca rotate --sandbox {id}")),
        }
    }

    /// The same store, naming `command(id)` as the command that makes sandbox `id` a new CA: the caller knows
    /// the configuration (and working folder) it must run with, so the hint runs as printed.
    pub(crate) fn with_rotate_command(self, command: RotateCommand) -> CaStore {
        CaStore {
            rotate_command: command,
            ..self
        }
    }

    /// The exact command that replaces sandbox `id`'s CA with one for what its policy allows now.
    pub(crate) fn rotate_command(&self, id: &SandboxId) -> String {
        (self.rotate_command)(id)
    }

    /// `error` with the command that fixes it, when a new CA does.
    fn remedied(&self, sandbox: &SandboxId, error: CaError) -> CaError {
        if error.rotation_fixes() {
            CaError::Remedied {
                error: Box::new(error),
                command: self.rotate_command(sandbox),
            }
        } else {
            error
        }
    }

    /// Whether the folder and every sandbox folder in it are private to cordon: owned by its user (or root)
    /// and writable by nobody else. A folder that does not exist yet passes.
    pub fn check_folders(&self) -> Result<(), CaError> {
        check_folders(&self.dir)
    }

    /// Loads `dir/<sandbox>/ca.pem` and `ca.key` if present (never regenerating them), else creates them with
    /// `scope`. A loaded CA keeps the scope it was made with: compare [`SandboxCa::scope`] with what the policy
    /// needs now. Refuses a certificate that does not match its key, a key file readable by group or others, a
    /// certificate that is not a CA or has expired, and a folder writable by group or others, with an error that
    /// names the file and says what to do.
    pub fn load_or_create(&self, sandbox: &SandboxId, scope: &Scope) -> Result<Arc<SandboxCa>, CaError> {
        let dir = self.sandbox_dir(sandbox)?;
        if let Err(e) = scope.normalized() {
            // Nothing can be created with this scope, so nothing is: a CA already there still loads.
            return self.load(sandbox)?.ok_or(e);
        }
        let _guard = self.lock()?;
        if let Some(ca) = load_locked(sandbox, &dir).map_err(|e| self.remedied(sandbox, e))? {
            return Ok(ca);
        }
        self.install_new(sandbox, &dir, scope)
    }

    /// Loads a sandbox's CA; `Ok(None)` if it has none yet. Completes or undoes an installation that a crash
    /// interrupted (see the module documentation), so it may rename or delete `.new` files.
    pub(crate) fn load(&self, sandbox: &SandboxId) -> Result<Option<Arc<SandboxCa>>, CaError> {
        let dir = self.sandbox_dir(sandbox)?;
        if !exists(&self.dir)? {
            return Ok(None);
        }
        let _guard = self.lock()?;
        load_locked(sandbox, &dir).map_err(|e| self.remedied(sandbox, e))
    }

    /// Replaces a sandbox's CA with a fresh key and certificate limited to `scope`, whatever state the current
    /// one is in (this is the remedy for a broken CA). The previous certificate is kept as `ca.pem.old`, the
    /// previous key is not kept. Leaves minted by the old CA stay cached until
    /// [`LeafCache::invalidate_sandbox`](crate::tls::cache::LeafCache::invalidate_sandbox) is called (they are never
    /// served for the new CA, whose leaves are cached apart).
    pub(crate) fn rotate(&self, sandbox: &SandboxId, scope: &Scope) -> Result<Arc<SandboxCa>, CaError> {
        let dir = self.sandbox_dir(sandbox)?;
        scope.normalized()?;
        let _guard = self.lock()?;
        self.install_new(sandbox, &dir, scope)
    }

    /// Holds off this process's other threads, then every other process sharing the folder: replicas, and
    /// `cordon ca export` or `rotate` run beside a live proxy.
    fn lock(&self) -> Result<(MutexGuard<'_, ()>, Option<fs::File>), CaError> {
        // The guarded state is on disk and every step leaves it recoverable, so a panic elsewhere poisons nothing.
        let guard = self.lock.lock().unpoisoned();
        Ok((guard, lock_folder(&self.dir)?))
    }

    fn sandbox_dir(&self, sandbox: &SandboxId) -> Result<PathBuf, CaError> {
        validate_sandbox_id(sandbox.as_str())?;
        Ok(self.dir.join(sandbox.as_str()))
    }

    /// Generates a CA and installs it in `dir` (creating the folders as needed), keeping a previous certificate
    /// as `ca.pem.old`.
    fn install_new(&self, sandbox: &SandboxId, dir: &Path, scope: &Scope) -> Result<Arc<SandboxCa>, CaError> {
        let scope = scope.normalized()?;
        // SECURITY: the folders are private from their creation (mode 0700), so no other local user can list,
        // read or replace a CA in them.
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io_err("create", dir))?;
        check_dir(dir)?;
        let (cert_pem, key_pem) = generate(sandbox, &scope)?;
        // Check the pair exactly as a later load will, before it replaces anything.
        let ca = SandboxCa::from_pem(sandbox, cert_pem, &key_pem, &dir.join(CERT_FILE), &dir.join(KEY_FILE))?;

        write_file(dir, NEW_CERT_FILE, ca.cert_pem().as_bytes(), 0o644)?;
        write_file(dir, NEW_KEY_FILE, key_pem.as_bytes(), 0o600)?;
        sync_dir(dir)?;
        let cert_path = dir.join(CERT_FILE);
        if exists(&cert_path)? {
            let old = dir.join(OLD_CERT_FILE);
            remove_if_present(&old)?;
            fs::hard_link(&cert_path, &old).map_err(io_err("keep a copy of", &cert_path))?;
        }
        rename(&dir.join(NEW_KEY_FILE), &dir.join(KEY_FILE))?;
        rename(&dir.join(NEW_CERT_FILE), &cert_path)?;
        sync_dir(dir)?;
        Ok(Arc::new(ca))
    }
}

/// Sandbox ids are `[A-Za-z0-9._-]{1,64}`, but not `.` or `..`.
fn validate_sandbox_id(id: &str) -> Result<(), CaError> {
    let invalid = |reason| {
        Err(CaError::InvalidSandboxId {
            id: id.to_owned(),
            reason,
        })
    };
    if id.is_empty() || id.len() > MAX_SANDBOX_ID_LEN {
        return invalid("it must be 1 to 64 characters long");
    }
    // SECURITY: path traversal out of the CA folder (`..`, `a/../../b`) or onto the folder itself (`.`).
    if id == "."
        || id == ".."
        || !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return invalid("it may contain only letters, digits, '.', '_' and '-', and may not be '.' or '..'");
    }
    Ok(())
}

fn load_locked(sandbox: &SandboxId, dir: &Path) -> Result<Option<Arc<SandboxCa>>, CaError> {
    if !exists(dir)? {
        return Ok(None);
    }
    check_dir(dir)?;
    finish_interrupted_install(sandbox, dir)?;
    let cert_path = dir.join(CERT_FILE);
    let key_path = dir.join(KEY_FILE);
    match (exists(&cert_path)?, exists(&key_path)?) {
        (false, false) => Ok(None),
        (true, false) => Err(CaError::Incomplete {
            present: cert_path,
            missing: key_path,
        }),
        (false, true) => Err(CaError::Incomplete {
            present: key_path,
            missing: cert_path,
        }),
        (true, true) => read_pair(sandbox, &cert_path, &key_path).map(|ca| Some(Arc::new(ca))),
    }
}

/// Installs the pair left by an interrupted installation if it matches, else discards its `.new` files.
fn finish_interrupted_install(sandbox: &SandboxId, dir: &Path) -> Result<(), CaError> {
    let new_cert = dir.join(NEW_CERT_FILE);
    let new_key = dir.join(NEW_KEY_FILE);
    remove_stale_temporaries(dir)?;
    let (has_new_cert, has_new_key) = (exists(&new_cert)?, exists(&new_key)?);
    if !has_new_cert && !has_new_key {
        return Ok(());
    }
    let cert = if has_new_cert {
        new_cert.clone()
    } else {
        dir.join(CERT_FILE)
    };
    let key = if has_new_key {
        new_key.clone()
    } else {
        dir.join(KEY_FILE)
    };
    let complete = exists(&cert)?
        && exists(&key)?
        && match read_pair(sandbox, &cert, &key) {
            Ok(_) => true,
            Err(CaError::KeyMismatch { .. }) => false,
            Err(e) => return Err(e),
        };
    if complete {
        if has_new_key {
            rename(&new_key, &dir.join(KEY_FILE))?;
        }
        if has_new_cert {
            rename(&new_cert, &dir.join(CERT_FILE))?;
        }
    } else {
        remove_if_present(&new_cert)?;
        remove_if_present(&new_key)?;
    }
    sync_dir(dir)
}

/// Removes temporary files a crash left behind while writing (one may hold a never-used CA key).
fn remove_stale_temporaries(dir: &Path) -> Result<(), CaError> {
    for entry in fs::read_dir(dir).map_err(io_err("list", dir))? {
        let name = entry.map_err(io_err("list", dir))?.file_name();
        let name = name.to_string_lossy();
        let ours = [NEW_CERT_FILE, NEW_KEY_FILE]
            .iter()
            .any(|file| name.starts_with(&format!(".{file}.tmp-")));
        if ours {
            remove_if_present(&dir.join(&*name))?;
        }
    }
    Ok(())
}

fn read_pair(sandbox: &SandboxId, cert_path: &Path, key_path: &Path) -> Result<SandboxCa, CaError> {
    let cert_pem = fs::read_to_string(cert_path).map_err(io_err("read", cert_path))?;
    let key_pem = read_key(key_path)?;
    SandboxCa::from_pem(sandbox, cert_pem, &key_pem, cert_path, key_path)
}

#[cfg(test)]
#[path = "store_tests.rs"]
pub(crate) mod tests;

#[cfg(test)]
#[path = "shared_tests.rs"]
mod shared_tests;
