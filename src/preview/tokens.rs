//! Links and sessions: the same claims (which preview, whose, until when) signed with HS256 by
//! `jsonwebtoken`, for two audiences, so that a link never passes for a session cookie nor a cookie for a link.

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::names::SandboxId;

/// A link's audience.
const LINK: &str = "cordon-preview-link";
/// A session's audience.
const SESSION: &str = "cordon-preview-session";

/// What a link or session grants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Claims {
    /// The preview's id (what revocation names).
    pub(crate) pid: String,
    /// The sandbox (a token naming text that is no id does not read).
    pub(crate) sbx: SandboxId,
    /// The sandbox's incarnation (`Sandbox::incarnation`) when the link was made: a link or session opens
    /// only that incarnation, not a sandbox created again with the id (one made before incarnations were
    /// named has none, and opens nothing).
    #[serde(default)]
    pub(crate) inc: String,
    /// The sandbox's port.
    pub(crate) port: u16,
    /// The person it was made for.
    pub(crate) user: String,
    /// Unix seconds after which it is refused.
    pub(crate) exp: u64,
    /// Link or session.
    #[serde(default)]
    aud: String,
}

impl Claims {
    /// Claims for preview `pid` of `port` of incarnation `inc` of `sbx`, for `user`, until `exp`.
    pub(crate) fn new(pid: String, (sbx, inc): (SandboxId, String), port: u16, user: String, exp: u64) -> Claims {
        Claims {
            pid,
            sbx,
            inc,
            port,
            user,
            exp,
            aud: String::new(),
        }
    }
}

/// Signs and checks links and sessions with one key.
pub(crate) struct LinkSigner {
    encoding: EncodingKey,
    decoding: DecodingKey,
}

impl LinkSigner {
    /// A signer with `key`.
    pub(crate) fn new(key: &[u8]) -> LinkSigner {
        LinkSigner {
            encoding: EncodingKey::from_secret(key),
            decoding: DecodingKey::from_secret(key),
        }
    }

    /// A link token for `claims`.
    pub(crate) fn link(&self, claims: &Claims) -> Result<String, String> {
        self.sign(claims, LINK)
    }

    /// A session token for `claims`.
    pub(crate) fn session(&self, claims: &Claims) -> Result<String, String> {
        self.sign(claims, SESSION)
    }

    fn sign(&self, claims: &Claims, aud: &str) -> Result<String, String> {
        let claims = Claims {
            aud: aud.to_string(),
            ..claims.clone()
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding).map_err(|e| e.to_string())
    }

    /// The claims of a link token, if it is one this key signed and it has not expired.
    pub(crate) fn check_link(&self, token: &str) -> Option<Claims> {
        self.check(token, LINK)
    }

    /// The claims of a session token, if it is one this key signed and it has not expired.
    pub(crate) fn check_session(&self, token: &str) -> Option<Claims> {
        self.check(token, SESSION)
    }

    fn check(&self, token: &str, aud: &str) -> Option<Claims> {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_audience(&[aud]);
        validation.leeway = 0;
        validation.set_required_spec_claims(&["exp", "aud"]);
        jsonwebtoken::decode::<Claims>(token, &self.decoding, &validation)
            .ok()
            .map(|d| d.claims)
    }
}

#[cfg(test)]
#[path = "tokens_tests.rs"]
mod tests;
