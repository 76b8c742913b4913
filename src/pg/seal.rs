//! Sealing of CA keys at rest in the database: XChaCha20-Poly1305 under a key derived (HKDF-SHA256) from
//! `control.store_key`, with the row's identity as associated data so a sealed key cannot be moved to another row.

use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};
use secrecy::{ExposeSecret, SecretString};

/// The shortest `control.store_key` accepted, in characters.
const MIN_KEY_CHARS: usize = 32;
/// A format byte in front of every sealed value, for a future change of algorithm.
const VERSION: u8 = 1;
const NONCE_LEN: usize = 24;

/// Seals and opens values under the store key.
pub(crate) struct Sealer {
    cipher: XChaCha20Poly1305,
}

impl Sealer {
    /// A sealer for `control.store_key`; refuses a key shorter than 32 characters.
    pub(crate) fn new(key: &SecretString) -> Result<Sealer, String> {
        let text = key.expose_secret();
        if text.chars().count() < MIN_KEY_CHARS {
            return Err(format!(
                "control.store_key: is shorter than {MIN_KEY_CHARS} characters; use e.g. `openssl rand -hex 32`"
            ));
        }
        let salt = ring::hkdf::Salt::new(ring::hkdf::HKDF_SHA256, b"cordon store key v1");
        let prk = salt.extract(text.as_bytes());
        let mut derived = [0u8; 32];
        prk.expand(&[b"ca keys"], ring::hkdf::HKDF_SHA256)
            .and_then(|okm| okm.fill(&mut derived))
            .map_err(|_| "control.store_key: cannot derive the sealing key".to_owned())?;
        Ok(Sealer {
            cipher: XChaCha20Poly1305::new(Key::from_slice(&derived)),
        })
    }

    /// `value` sealed for the row `aad`.
    pub(crate) fn seal(&self, aad: &str, value: &[u8]) -> Result<Vec<u8>, String> {
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let sealed = self
            .cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: value,
                    aad: aad.as_bytes(),
                },
            )
            .map_err(|_| "cannot seal a value".to_owned())?;
        let mut out = Vec::with_capacity(1 + NONCE_LEN + sealed.len());
        out.push(VERSION);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    /// The value sealed for the row `aad`; an error if it was sealed for another row, under another key, or
    /// altered.
    pub(crate) fn open(&self, aad: &str, sealed: &[u8]) -> Result<Vec<u8>, String> {
        let (version, rest) = sealed.split_first().ok_or("an empty sealed value")?;
        if *version != VERSION || rest.len() < NONCE_LEN {
            return Err("a sealed value in an unknown format".to_owned());
        }
        let (nonce, body) = rest.split_at(NONCE_LEN);
        // SECURITY: authenticated decryption bound to the row: a key from another row, sealed under another
        // store key, or altered, is refused.
        self.cipher
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: body,
                    aad: aad.as_bytes(),
                },
            )
            .map_err(|_| {
                "a sealed value that does not open with control.store_key (another key, or altered)".to_owned()
            })
    }
}

#[cfg(test)]
#[path = "seal_tests.rs"]
mod tests;
