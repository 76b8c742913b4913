//! Verifying an ID token and reading the person it names.

use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{AlgorithmParameters, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};
use subtle::ConstantTimeEq;

use super::error::SignInError;
use crate::config::console::RoleSource;
use crate::principal::Roles;

/// Clock skew allowed between cordon and the provider, in seconds.
const LEEWAY: u64 = 60;
/// The longest email or `sub` a person's name is made of (with its prefix, it fits the 128 characters a
/// decision's `by` holds).
const MAX_NAME: usize = 112;
/// What a person's name starts with when it is their email.
pub(crate) const PERSON: &str = "person:";
/// What it starts with when it is their `sub` (the provider gave no verified email).
pub(crate) const PERSON_SUB: &str = "person-sub:";

/// Who signed in, from a verified ID token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Person {
    /// `person:` and their `email` when the provider has not said it is unverified, else `person-sub:` and their
    /// `sub`. A token's name can hold no `:`, so no person is ever named as a token is.
    pub(crate) name: String,
    /// `sub`: the provider's stable id of the person.
    pub(crate) subject: String,
    /// The roles the roles claim gives.
    pub(crate) roles: Roles,
    /// The roles claim's values that gave a role (the roles are found from them again at each console request,
    /// under the `console.oidc.roles` then in force).
    pub(crate) claimed: Vec<String>,
}

/// The `kid` an ID token's header names, if it is a JWT at all.
pub(super) fn key_id(token: &str) -> Option<String> {
    jsonwebtoken::decode_header(token).ok()?.kid
}

/// What an ID token is checked against.
pub(super) struct Verifier<'a> {
    /// The issuer, as the discovery document writes it.
    pub(super) issuer: &'a str,
    /// cordon's client id: the audience.
    pub(super) client_id: &'a str,
    /// The algorithms the provider announced (asymmetric only).
    pub(super) algorithms: &'a [Algorithm],
    /// The provider's public keys.
    pub(super) keys: &'a JwkSet,
}

impl Verifier<'_> {
    /// The claims of `token` once its signature, issuer, audience, times and `nonce` are what they must be.
    pub(super) fn verify(&self, token: &str, nonce: &str) -> Result<Map<String, Value>, SignInError> {
        let refuse = |why: String| SignInError::IdToken(why);
        // SECURITY: an unsigned (`alg: none`) or HMAC-signed token, or one signed with an algorithm the provider
        // does not announce, is refused before any key is tried.
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| refuse(format!("it is not a signed JWT cordon can read ({e})")))?;
        if !self.algorithms.contains(&header.alg) {
            return Err(refuse(format!(
                "it is signed with {:?}, which is not one of the provider's algorithms ({:?})",
                header.alg, self.algorithms
            )));
        }
        let candidates: Vec<_> = match &header.kid {
            Some(kid) => self.keys.find(kid).into_iter().collect(),
            None => self.keys.keys.iter().collect(),
        };
        if candidates.is_empty() {
            return Err(refuse(format!(
                "it names the key {:?}, which the provider's key set does not hold",
                header.kid.unwrap_or_default()
            )));
        }
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[self.issuer]);
        validation.set_audience(&[self.client_id]);
        validation.set_required_spec_claims(&["exp", "iat", "iss", "aud", "sub"]);
        validation.leeway = LEEWAY;
        validation.validate_nbf = true;
        let mut last = refuse("no key of the provider's verifies its signature".into());
        for jwk in candidates {
            if matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)) {
                continue;
            }
            let Ok(key) = DecodingKey::from_jwk(jwk) else { continue };
            match jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation) {
                Ok(data) => return self.check_rest(data.claims, nonce),
                Err(e) => last = refuse(explain(e.kind())),
            }
        }
        Err(last)
    }

    /// What the library leaves to the relying party: the nonce, `azp`, and an `iat` from the future.
    fn check_rest(&self, claims: Map<String, Value>, nonce: &str) -> Result<Map<String, Value>, SignInError> {
        let refuse = |why: &str| Err(SignInError::IdToken(why.to_owned()));
        // SECURITY: the nonce binds the ID token to the sign-in this browser started; a token from another
        // sign-in (replayed, or injected into this one) carries another nonce.
        let carried = claims.get("nonce").and_then(Value::as_str).unwrap_or_default();
        if !bool::from(carried.as_bytes().ct_eq(nonce.as_bytes())) || nonce.is_empty() {
            return refuse("its nonce is not the one this sign-in sent (a token from another sign-in)");
        }
        let several = claims.get("aud").and_then(Value::as_array).is_some_and(|a| a.len() > 1);
        match claims.get("azp").and_then(Value::as_str) {
            Some(azp) if azp != self.client_id => return refuse("it was issued to another client (azp)"),
            None if several => return refuse("it names several audiences and no azp"),
            _ => {}
        }
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        if claims
            .get("iat")
            .and_then(Value::as_u64)
            .is_some_and(|iat| iat > now + LEEWAY)
        {
            return refuse("it was issued in the future (iat)");
        }
        Ok(claims)
    }
}

/// A sentence for why the library refused a token.
fn explain(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::ExpiredSignature => "it has expired (exp)".into(),
        ErrorKind::ImmatureSignature => "it is not valid yet (nbf)".into(),
        ErrorKind::InvalidSignature => "its signature does not verify with the provider's key".into(),
        ErrorKind::InvalidIssuer => "it names another issuer (iss)".into(),
        ErrorKind::InvalidAudience => "it was issued for another client (aud)".into(),
        ErrorKind::MissingRequiredClaim(c) => format!("it lacks the claim {c}"),
        ErrorKind::InvalidAlgorithm => "its algorithm does not fit the provider's key".into(),
        other => format!("it does not verify ({other:?})"),
    }
}

/// The person `claims` name, with the roles `roles_claim` gives through `source`; refused when none.
pub(super) fn person(
    claims: &Map<String, Value>,
    roles_claim: &str,
    source: &RoleSource,
) -> Result<Person, SignInError> {
    let subject = claims
        .get("sub")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| SignInError::IdToken("it has no sub".into()))?
        .to_owned();
    let fits = |s: &&str| !s.is_empty() && s.chars().count() <= MAX_NAME && !s.chars().any(char::is_control);
    let unverified = claims.get("email_verified").and_then(Value::as_bool) == Some(false);
    let email = claims
        .get("email")
        .and_then(Value::as_str)
        .filter(|_| !unverified)
        .filter(fits);
    // SECURITY: a person's name is in a namespace of its own (`person:`), apart from admin tokens' names.
    let name = match email {
        Some(e) => format!("{PERSON}{e}"),
        None if fits(&subject.as_str()) => format!("{PERSON_SUB}{subject}"),
        None => {
            return Err(SignInError::IdToken(
                "its sub is too long or holds control characters".into(),
            ));
        }
    };
    let values: Vec<&str> = match claims.get(roles_claim) {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let roles = source.roles(values.iter().copied());
    if roles.is_empty() {
        return Err(SignInError::NoRole(name, roles_claim.to_owned()));
    }
    // Kept: the values that give a role (bounded by the configuration, whatever the token holds).
    let claimed = values
        .into_iter()
        .filter(|v| !source.roles([*v]).is_empty())
        .map(str::to_owned)
        .collect();
    Ok(Person {
        name,
        subject,
        roles,
        claimed,
    })
}

#[cfg(test)]
#[path = "idtoken_tests.rs"]
mod tests;
