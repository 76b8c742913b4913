//! The embedded default vault: one encrypted file on cordon's disk.
//!
//! Layout: the 8-byte magic `CORDONV1`, a random 24-byte nonce, then the XChaCha20-Poly1305 ciphertext
//! (the magic is authenticated as associated data) of a JSON object mapping names to values. A missing
//! file is an empty vault. Every write goes to a fresh 0600 temporary file in the same directory, is
//! fsynced, renamed over the vault, and the directory is fsynced: a crash leaves the old or the new vault.

use std::collections::BTreeMap;
use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chacha20poly1305::aead::rand_core::RngCore;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use secrecy::zeroize::{Zeroize, Zeroizing};
use secrecy::{ExposeSecret, SecretString};

use super::store::{SecretStore, VaultError};

/// The versioned header at the start of every vault file.
const MAGIC: &[u8; 8] = b"CORDONV1";
const NONCE_LEN: usize = 24;
const TAG_LEN: usize = 16;
const NAME_RULE: &str = "use 1-128 characters of A-Z a-z 0-9 . _ / -";

/// Where the vault's 32-byte key comes from.
#[derive(Debug, Clone)]
pub(crate) enum KeySource {
    /// A file holding the key in hex; created (mode 0600, random key) if it does not exist.
    File(PathBuf),
    /// An environment variable of cordon's holding the key in hex.
    Env(String),
}

/// An encrypted vault file. `get` runs its file I/O off the async runtime; `set`, `remove` and `list`
/// block (they are for the command line). Writes from one process are serialised.
pub(crate) struct FileVault {
    inner: Arc<VaultFile>,
}

struct VaultFile {
    path: PathBuf,
    key: Zeroizing<[u8; 32]>,
    write_lock: Mutex<()>,
}

/// The decrypted name -> value map; its values are wiped when it is dropped.
struct SecretMap(BTreeMap<String, String>);

impl Drop for SecretMap {
    fn drop(&mut self) {
        for value in self.0.values_mut() {
            value.zeroize();
        }
    }
}

/// Check a secret name: 1-128 characters of `[A-Za-z0-9._/-]`.
pub(crate) fn check_name(name: &str) -> Result<(), VaultError> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'/' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(VaultError::BadName {
            name: name.chars().take(140).collect(),
            rule: NAME_RULE,
        })
    }
}

fn io_err(action: &'static str, path: &Path, e: std::io::Error) -> VaultError {
    VaultError::Io {
        action,
        path: path.display().to_string(),
        detail: e.to_string(),
    }
}

fn parse_key(hex_text: &str, source_name: String) -> Result<Zeroizing<[u8; 32]>, VaultError> {
    let mut key = Zeroizing::new([0u8; 32]);
    hex::decode_to_slice(hex_text.trim(), key.as_mut_slice()).map_err(|e| VaultError::BadKey {
        source_name,
        detail: format!("expected 64 hex digits (32 bytes): {e}"),
    })?;
    Ok(key)
}

/// Create the parent directory of `path` (mode 0700) if it is missing.
fn ensure_parent(path: &Path) -> Result<(), VaultError> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() && !dir.exists() => fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| io_err("create directory", dir, e)),
        _ => Ok(()),
    }
}

fn load_key_file(path: &Path) -> Result<Zeroizing<[u8; 32]>, VaultError> {
    let source_name = format!("file {}", path.display());
    match fs::metadata(path) {
        Ok(meta) => {
            // SECURITY: a key file that other local users can read lets them decrypt every secret.
            if meta.permissions().mode() & 0o077 != 0 {
                return Err(VaultError::KeyPermissions {
                    path: path.display().to_string(),
                });
            }
            let text = Zeroizing::new(fs::read_to_string(path).map_err(|e| io_err("read", path, e))?);
            parse_key(&text, source_name)
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {
            let mut key = Zeroizing::new([0u8; 32]);
            OsRng.fill_bytes(key.as_mut_slice());
            let text = Zeroizing::new(format!("{}\n", hex::encode(key.as_slice())));
            // Created 0600 and whole (crate::secret_file); another process may have placed it first, and
            // then theirs is the key.
            match crate::secret_file::create_once(path, text.as_bytes()) {
                Ok(true) => Ok(key),
                Ok(false) => load_key_file(path),
                Err(e) => Err(io_err("create", path, e)),
            }
        }
        Err(e) => Err(io_err("read", path, e)),
    }
}

impl FileVault {
    /// The folders of the vault and its key file must be private to cordon: refused by [`FileVault::open`],
    /// and before start (`cordon check` too) even when the key file does not exist yet.
    pub(crate) fn check_folders(path: &Path, key: &KeySource) -> Result<(), VaultError> {
        use crate::secret_file::{check_private_dir, folder_of};
        check_private_dir(folder_of(path), "the folder of vault.file.path").map_err(VaultError::Folder)?;
        if let KeySource::File(key_path) = key {
            check_private_dir(folder_of(key_path), "the folder of vault.file.key_file").map_err(VaultError::Folder)?;
        }
        Ok(())
    }

    /// Open the vault at `path` with the key from `key` (a key file is created on first use).
    /// The vault file itself need not exist yet: a missing file is an empty vault.
    pub(crate) fn open(path: PathBuf, key: KeySource) -> Result<FileVault, VaultError> {
        FileVault::check_folders(&path, &key)?;
        let key = match key {
            KeySource::File(key_path) => load_key_file(&key_path)?,
            KeySource::Env(var) => {
                let text = Zeroizing::new(match std::env::var(&var) {
                    Ok(v) => v,
                    Err(std::env::VarError::NotPresent) => return Err(VaultError::EnvMissing { var }),
                    Err(std::env::VarError::NotUnicode(_)) => return Err(VaultError::EnvNotUnicode { var }),
                });
                parse_key(&text, format!("environment variable {var}"))?
            }
        };
        Ok(FileVault {
            inner: Arc::new(VaultFile {
                path,
                key,
                write_lock: Mutex::new(()),
            }),
        })
    }

    /// Store `value` under `name`, replacing any previous value.
    pub(crate) fn set(&self, name: &str, value: SecretString) -> Result<(), VaultError> {
        check_name(name)?;
        let _guard = self.inner.write_lock.lock().unwrap_or_else(|e| e.into_inner());
        let _other_processes = self.inner.lock_file()?;
        let mut entries = self.inner.load()?;
        if let Some(old) = entries.0.get_mut(name) {
            old.zeroize();
        }
        entries.0.insert(name.to_owned(), value.expose_secret().to_owned());
        self.inner.store(&entries)
    }

    /// Remove `name`; `Ok(false)` if it was not there.
    pub(crate) fn remove(&self, name: &str) -> Result<bool, VaultError> {
        check_name(name)?;
        let _guard = self.inner.write_lock.lock().unwrap_or_else(|e| e.into_inner());
        let _other_processes = self.inner.lock_file()?;
        let mut entries = self.inner.load()?;
        match entries.0.remove(name) {
            Some(mut old) => {
                old.zeroize();
                self.inner.store(&entries)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// The names in the vault, sorted (never the values).
    pub(crate) fn list(&self) -> Result<Vec<String>, VaultError> {
        Ok(self.inner.load()?.0.keys().cloned().collect())
    }

    /// Read `name` without leaving the current thread.
    #[cfg(test)]
    pub(crate) fn get_blocking(&self, name: &str) -> Result<SecretString, VaultError> {
        self.inner.get(name)
    }
}

impl VaultFile {
    fn get(&self, name: &str) -> Result<SecretString, VaultError> {
        check_name(name)?;
        let entries = self.load()?;
        match entries.0.get(name) {
            // Copied into an exactly sized secret box; `entries` wipes the original.
            Some(value) => Ok(SecretString::from(value.as_str())),
            None => Err(VaultError::NotFound {
                name: name.to_owned(),
                vault: self.path.display().to_string(),
            }),
        }
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new(self.key.as_slice().into())
    }

    fn decrypt_error(&self) -> VaultError {
        VaultError::Decrypt {
            path: self.path.display().to_string(),
        }
    }

    /// Holds off other processes editing the same vault (two `cordon vault set` at once) from its read to
    /// its write, so that neither drops the other's change. The lock file is `<vault>.lock`.
    fn lock_file(&self) -> Result<Option<fs::File>, VaultError> {
        ensure_parent(&self.path)?;
        let mut name = self.path.clone().into_os_string();
        name.push(".lock");
        let path = PathBuf::from(name);
        crate::file_lock::exclusive(&path).map_err(|e| io_err("lock", &path, e))
    }

    /// Read and decrypt the vault; a missing file is empty.
    fn load(&self) -> Result<SecretMap, VaultError> {
        let data = match fs::read(&self.path) {
            Ok(d) => d,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(SecretMap(BTreeMap::new())),
            Err(e) => return Err(io_err("read", &self.path, e)),
        };
        if data.len() < MAGIC.len() + NONCE_LEN + TAG_LEN || !data.starts_with(MAGIC) {
            return Err(self.decrypt_error());
        }
        let (nonce, ciphertext) = data[MAGIC.len()..].split_at(NONCE_LEN);
        let payload = Payload {
            msg: ciphertext,
            aad: MAGIC,
        };
        // SECURITY: authenticated decryption; a tampered or truncated file is refused, never parsed as garbage.
        let plaintext = Zeroizing::new(
            self.cipher()
                .decrypt(XNonce::from_slice(nonce), payload)
                .map_err(|_| self.decrypt_error())?,
        );
        let map: BTreeMap<String, String> = serde_json::from_slice(&plaintext).map_err(|_| self.decrypt_error())?;
        Ok(SecretMap(map))
    }

    /// Encrypt `entries` and replace the vault atomically.
    fn store(&self, entries: &SecretMap) -> Result<(), VaultError> {
        // Sized for the worst-case JSON escaping so the buffer never reallocates (leaving unwiped copies).
        let capacity = 2 + entries
            .0
            .iter()
            .map(|(k, v)| 6 * (k.len() + v.len()) + 6)
            .sum::<usize>();
        let mut plaintext = Zeroizing::new(Vec::with_capacity(capacity));
        serde_json::to_writer(&mut *plaintext, &entries.0).map_err(|e| VaultError::Io {
            action: "encode",
            path: self.path.display().to_string(),
            detail: e.to_string(),
        })?;
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let payload = Payload {
            msg: plaintext.as_slice(),
            aad: MAGIC,
        };
        let ciphertext = self.cipher().encrypt(&nonce, payload).map_err(|_| VaultError::Io {
            action: "encrypt",
            path: self.path.display().to_string(),
            detail: "encryption failed".to_owned(),
        })?;
        let mut out = Vec::with_capacity(MAGIC.len() + NONCE_LEN + ciphertext.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(nonce.as_slice());
        out.extend_from_slice(&ciphertext);
        // Whole or not at all, 0600 (crate::secret_file).
        crate::secret_file::replace(&self.path, &out).map_err(|e| io_err("write", &self.path, e))
    }
}

impl SecretStore for FileVault {
    async fn get(&self, name: &str) -> Result<SecretString, VaultError> {
        let inner = Arc::clone(&self.inner);
        let name = name.to_owned();
        let path = self.inner.path.display().to_string();
        tokio::task::spawn_blocking(move || inner.get(&name))
            .await
            .map_err(|e| VaultError::Io {
                action: "read",
                path,
                detail: format!("the reading task failed: {e}"),
            })?
    }
}

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;
