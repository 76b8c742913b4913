//! Proxy credentials of run-time sandboxes: HS256 JWTs signed with a key every replica shares, carrying the
//! sandbox's id, owner, policy, creation nonce and expiry, so any replica can verify one without asking the
//! store. Nothing secret is stored: a credential is its signature.

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

/// The audience every credential names, so a token signed for something else with the same key is refused.
const AUDIENCE: &str = "cordon-proxy";

/// The shortest signing key accepted, in bytes (HMAC-SHA256's block of security).
pub(crate) const MIN_KEY_BYTES: usize = 32;

/// What a credential says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CredentialClaims {
    /// Sandbox id.
    pub(crate) sub: String,
    /// The creation nonce of the sandbox.
    pub(crate) nonce: String,
    /// Owning user.
    pub(crate) usr: String,
    /// Policy name.
    pub(crate) pol: String,
    /// Issued at, Unix seconds.
    pub(crate) iat: i64,
    /// Expiry at issue, Unix seconds (a renewal recorded in the store moves it later).
    pub(crate) exp: i64,
    /// Always `cordon-proxy`.
    pub(crate) aud: String,
    /// Random per credential, so two issued in the same second differ.
    pub(crate) jti: String,
}

/// Signs and verifies credentials.
pub(crate) struct TokenSigner {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
}

impl TokenSigner {
    /// A signer with this key; at least [`MIN_KEY_BYTES`] bytes.
    pub(crate) fn new(key: &SecretString) -> Result<TokenSigner, String> {
        let bytes = key.expose_secret().as_bytes();
        if bytes.len() < MIN_KEY_BYTES {
            return Err(format!(
                "the signing key has {} bytes; it needs at least {MIN_KEY_BYTES} (e.g. `openssl rand -hex 32`)",
                bytes.len()
            ));
        }
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_audience(&[AUDIENCE]);
        // Expiry is judged by the caller, which knows about renewals; the claim must still be present.
        validation.validate_exp = false;
        validation.set_required_spec_claims(&["exp", "aud", "sub"]);
        Ok(TokenSigner {
            encoding: EncodingKey::from_secret(bytes),
            decoding: DecodingKey::from_secret(bytes),
            validation,
        })
    }

    /// A credential for a sandbox.
    pub(crate) fn mint(
        &self,
        sub: &str,
        nonce: &str,
        usr: &str,
        pol: &str,
        iat: i64,
        exp: i64,
    ) -> Result<String, String> {
        let claims = CredentialClaims {
            sub: sub.into(),
            nonce: nonce.into(),
            usr: usr.into(),
            pol: pol.into(),
            iat,
            exp,
            aud: AUDIENCE.into(),
            jti: crate::secret_file::random_hex(12)?,
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .map_err(|e| format!("cannot sign a credential: {e}"))
    }

    /// The claims of a credential this key signed; `None` for anything else (forged, another algorithm,
    /// another audience, garbage). Expiry is not judged here.
    pub(crate) fn verify(&self, token: &str) -> Option<CredentialClaims> {
        // SECURITY: only HS256 under our key is accepted — `alg: none` and algorithm confusion are refused
        // by the fixed `Validation`.
        jsonwebtoken::decode::<CredentialClaims>(token, &self.decoding, &self.validation)
            .ok()
            .map(|d| d.claims)
    }
}

/// Whether a proxy token looks like a signed credential (three base64url parts) rather than a declared
/// sandbox's token.
pub(crate) fn looks_signed(token: &str) -> bool {
    token.starts_with("eyJ") && token.bytes().filter(|b| *b == b'.').count() == 2
}

#[cfg(test)]
#[path = "signed_tests.rs"]
mod tests;
