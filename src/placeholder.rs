//! Placeholders: per (sandbox incarnation, credential) values that are worthless anywhere but at cordon.
//!
//! A placeholder is `cordon-ph-` followed by 32 hex digits of HMAC-SHA256(key, incarnation, credential), so
//! it is stable across restarts and replicas (they share the key and the store that holds a run-time
//! sandbox's nonce), different for every sandbox, incarnation and credential, and reveals nothing. The
//! incarnation (`Sandbox::incarnation`: `id#nonce` or `id@user`) and not the id: a sandbox created again with
//! an earlier one's id gets other placeholders and AWS keys, so none of the earlier one's is swapped for it.
//! The key lives in a file created 0600 on first use.

use crate::names::{CredentialName, Incarnation};
use std::collections::HashMap;
use std::path::Path;

use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

/// Every placeholder starts with this.
pub(crate) const PREFIX: &str = "cordon-ph-";
const HEX_LEN: usize = 32;

/// Computes and recognises placeholders.
pub struct Placeholders {
    key: hmac::Key,
    /// placeholder -> (incarnation, credential), for every declared sandbox and credential.
    known: HashMap<String, (Incarnation, CredentialName)>,
}

impl Placeholders {
    /// Load the key from `key_file` (creating it, 0600, on first use).
    pub fn load(key_file: &Path) -> Result<Placeholders, String> {
        let bytes = match std::fs::read(key_file) {
            Ok(b) => check_key(key_file, b)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => create_key(key_file)?,
            Err(e) => return Err(format!("{}: {e}", key_file.display())),
        };
        Ok(Placeholders::from_key(&bytes))
    }

    /// From raw key bytes (tests).
    pub(crate) fn from_key(bytes: &[u8]) -> Placeholders {
        Placeholders {
            key: hmac::Key::new(hmac::HMAC_SHA256, bytes),
            known: HashMap::new(),
        }
    }

    /// Remember the placeholders of these (incarnation, credential) pairs so any of them can be recognised.
    pub(crate) fn learn<'a>(&mut self, pairs: impl IntoIterator<Item = (&'a Incarnation, &'a CredentialName)>) {
        for (sandbox, credential) in pairs {
            let p = self.value(sandbox, credential);
            self.known.insert(p, (sandbox.clone(), credential.clone()));
        }
    }

    /// The placeholder of `credential` for the sandbox incarnation `incarnation` (`Sandbox::incarnation`).
    pub fn value(&self, incarnation: &Incarnation, credential: &CredentialName) -> String {
        self.tag(incarnation, credential.as_str())
    }

    /// The placeholder AWS secret access key of `credential` for the sandbox incarnation `incarnation`: a
    /// placeholder of its own (another label than the credential's name), so it is not the key id's.
    pub(crate) fn aws_secret(&self, incarnation: &Incarnation, credential: &CredentialName) -> String {
        self.tag(incarnation, &format!("{credential}\0aws-secret-access-key"))
    }

    /// `PREFIX` and HMAC(key, incarnation NUL label), cut to `HEX_LEN` hex digits.
    fn tag(&self, incarnation: &Incarnation, label: &str) -> String {
        let mut ctx = hmac::Context::with_key(&self.key);
        ctx.update(incarnation.as_str().as_bytes());
        ctx.update(&[0]);
        ctx.update(label.as_bytes());
        let tag = ctx.sign();
        let hex = hex::encode(tag.as_ref());
        format!("{PREFIX}{}", &hex[..HEX_LEN])
    }

    /// Whose placeholder this is, if it is one cordon issued.
    pub(crate) fn owner(&self, placeholder: &str) -> Option<&(Incarnation, CredentialName)> {
        self.known.get(placeholder)
    }
}

/// `text` with the secret part of every placeholder hidden (`cordon-ph-[redacted]`), for showing a request to
/// a person.
pub(crate) fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(PREFIX) {
        let after = at + PREFIX.len();
        out.push_str(&rest[..after]);
        let tail = &rest[after..];
        let hex = tail.bytes().take_while(u8::is_ascii_hexdigit).count();
        if hex > 0 {
            out.push_str("[redacted]");
        }
        rest = &tail[hex..];
    }
    out.push_str(rest);
    out
}

/// The environment variable a sandbox finds a credential's placeholder in: `CORDON_PLACEHOLDER_<NAME>`, the
/// name upper-cased with anything but letters and digits as `_`.
pub(crate) fn env_var(credential: &str) -> String {
    let name: String = credential
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("CORDON_PLACEHOLDER_{name}")
}

fn create_key(path: &Path) -> Result<Vec<u8>, String> {
    let mut key = vec![0u8; 32];
    SystemRandom::new()
        .fill(&mut key)
        .map_err(|_| "the system random generator failed".to_string())?;
    // Created 0600 and whole (crate::secret_file); if another process placed it first, theirs is the key.
    match crate::secret_file::create_once(path, &key) {
        Ok(true) => Ok(key),
        Ok(false) => std::fs::read(path)
            .map_err(|e| format!("{}: {e}", path.display()))
            .and_then(|theirs| check_key(path, theirs)),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

fn check_key(path: &Path, bytes: Vec<u8>) -> Result<Vec<u8>, String> {
    if bytes.len() == 32 {
        Ok(bytes)
    } else {
        Err(format!("{}: not a placeholder key (expected 32 bytes)", path.display()))
    }
}

#[cfg(test)]
#[path = "placeholder_tests.rs"]
mod tests;
