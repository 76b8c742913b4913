//! Who is talking: a sandbox identified by `Proxy-Authorization: Basic id:token`, or by source address.
//!
//! Judged on every request: a keep-alive connection never inherits an earlier request's identity.
//! Tokens are stored only as SHA-256 hashes and compared in constant time. Source addresses identify a
//! sandbox only where they cannot be spoofed, i.e. behind a gateway that owns the sandbox's network.

use crate::reason::Reason;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use base64::Engine;
use http::HeaderMap;
use http::header::PROXY_AUTHORIZATION;
use ipnet::IpNet;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub(crate) mod signed;

use crate::names::{Incarnation, SandboxId};

/// A sandbox cordon knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// Its id.
    pub(crate) id: SandboxId,
    /// The user who owns it.
    pub(crate) user: String,
    /// The name of its policy.
    pub(crate) policy: String,
    /// Where it was declared.
    pub(crate) origin: Origin,
    /// Its incarnation, made once (see [`Sandbox::incarnation`]): several steps of every request ask for it.
    incarnation: Incarnation,
}

/// A sandbox as declared in the file.
#[derive(Debug, Clone)]
pub struct SandboxSpec {
    /// Its id (the user name in `Proxy-Authorization: Basic`).
    pub id: SandboxId,
    /// The owner, for audit and per-user limits.
    pub user: String,
    /// SHA-256 of its proxy token; the token itself is never stored.
    pub token_sha256: Option<[u8; 32]>,
    /// Source ranges that identify it without a token (trustworthy only behind a gateway).
    pub source_cidrs: Vec<IpNet>,
    /// Its policy's name.
    pub policy: String,
}

/// Where a sandbox comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The configuration file.
    Config,
    /// The admin API, at run time.
    Api {
        /// Random per creation; a re-created id does not revive an old credential.
        nonce: String,
        /// Unix seconds, as the credential said (a renewal known to the store moves it).
        expires: i64,
    },
}

impl Sandbox {
    /// Its incarnation: one life of one id, what everything bound to a sandbox is bound to (its open
    /// connections, placeholders and AWS keys, preview links and sessions, approval grants, budgets).
    ///
    /// A run-time sandbox's is `id#nonce` (the nonce is random per creation, so an id created again, after a
    /// revocation, an expiry or a purge, is another incarnation); a file sandbox's is `id@user` (declared again
    /// for another user by a reload, it is another incarnation; its token or policy changed, it is the same).
    /// An id has none of `#` and `@` (`SandboxId::parse`), so no two incarnations share a key.
    // SECURITY: an id reused for another sandbox inherits nothing of the earlier one (issue 34 item 3).
    pub fn incarnation(&self) -> &Incarnation {
        &self.incarnation
    }

    /// The sandbox `id` of `user`, with policy `policy`, declared in `origin`.
    pub(crate) fn new(id: SandboxId, user: String, policy: String, origin: Origin) -> Sandbox {
        let incarnation = match &origin {
            Origin::Config => Incarnation::declared(&id, &user),
            Origin::Api { nonce, .. } => Incarnation::created(&id, nonce),
        };
        Sandbox {
            id,
            user,
            policy,
            origin,
            incarnation,
        }
    }

    /// The same sandbox (the same incarnation) under policy `policy`.
    pub(crate) fn with_policy(self, policy: String) -> Sandbox {
        Sandbox { policy, ..self }
    }
}

/// Why a request has no identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AuthFailure {
    /// No credentials and no matching source address.
    #[error("send Proxy-Authorization: Basic with the sandbox id and token")]
    Missing,
    /// A header that is not `Basic base64(id:token)`, or more than one.
    #[error("the Proxy-Authorization header is malformed; use Basic with the sandbox id and token")]
    Malformed,
    /// Unknown sandbox or wrong token (deliberately indistinguishable).
    #[error("the sandbox id or token is wrong")]
    Invalid,
    /// A run-time sandbox whose time has run out.
    #[error("the sandbox has expired; renew it through the admin API or create a new one")]
    Expired,
    /// A run-time sandbox revoked through the admin API.
    #[error("the sandbox was revoked")]
    Revoked,
}

impl AuthFailure {
    /// Stable reason code.
    pub(crate) fn reason(&self) -> Reason {
        match self {
            AuthFailure::Missing => Reason::AuthMissing,
            AuthFailure::Malformed => Reason::AuthMalformed,
            AuthFailure::Invalid => Reason::AuthInvalid,
            AuthFailure::Expired => Reason::AuthExpired,
            AuthFailure::Revoked => Reason::AuthRevoked,
        }
    }
}

/// Why a sandbox's connections were closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closed {
    /// Revoked through the admin API.
    Revoked,
    /// Its time ran out.
    Expired,
    /// Gone from the configuration, or its policy is.
    Removed,
    /// A byte budget is spent.
    Budget,
}

impl From<Closed> for AuthFailure {
    fn from(c: Closed) -> Self {
        match c {
            Closed::Revoked => AuthFailure::Revoked,
            Closed::Expired => AuthFailure::Expired,
            Closed::Removed | Closed::Budget => AuthFailure::Invalid,
        }
    }
}

impl Closed {
    /// Stable code for logs and metrics.
    pub(crate) fn code(self) -> &'static str {
        match self {
            Closed::Revoked => "revoked",
            Closed::Expired => "expired",
            Closed::Removed => "removed",
            Closed::Budget => "budget",
        }
    }
}

struct SandboxEntry {
    sandbox: Arc<Sandbox>,
    token_sha256: Option<[u8; 32]>,
}

/// The sandboxes, indexed for identification.
pub struct Identities {
    by_id: HashMap<SandboxId, SandboxEntry>,
    by_source: Vec<(IpNet, Arc<Sandbox>)>,
}

impl Identities {
    /// Index the declared sandboxes.
    pub fn new(specs: &[SandboxSpec]) -> Identities {
        let mut by_id = HashMap::new();
        let mut by_source = Vec::new();
        for spec in specs {
            let sandbox = Arc::new(Sandbox::new(
                spec.id.clone(),
                spec.user.clone(),
                spec.policy.clone(),
                Origin::Config,
            ));
            for net in &spec.source_cidrs {
                by_source.push((*net, sandbox.clone()));
            }
            by_id.insert(
                spec.id.clone(),
                SandboxEntry {
                    sandbox,
                    token_sha256: spec.token_sha256,
                },
            );
        }
        Identities { by_id, by_source }
    }

    /// The declared sandbox with this id, without authentication.
    pub(crate) fn get(&self, id: &SandboxId) -> Option<Arc<Sandbox>> {
        self.named(id.as_str())
    }

    /// The declared sandbox the text `claimed` names (what a client sent, or a claim not yet read as an id):
    /// text that is no id finds nothing.
    pub(crate) fn named(&self, claimed: &str) -> Option<Arc<Sandbox>> {
        self.by_id.get(claimed).map(|e| e.sandbox.clone())
    }

    /// A declared sandbox by id and token. The id is what the sandbox sent, not yet known to be one: text
    /// that is no id finds no sandbox.
    pub fn by_id_token(&self, id: &str, token: &str) -> Result<Arc<Sandbox>, AuthFailure> {
        let presented: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        match self.by_id.get(id) {
            // SECURITY: constant-time comparison of the token hash, so response timing does not leak how
            // much of a guessed token was right.
            Some(SandboxEntry {
                sandbox,
                token_sha256: Some(expected),
            }) if bool::from(presented.ct_eq(expected)) => Ok(sandbox.clone()),
            _ => Err(AuthFailure::Invalid),
        }
    }

    /// The declared sandbox whose source range holds `client`.
    pub(crate) fn by_source(&self, client: IpAddr) -> Option<Arc<Sandbox>> {
        // An IPv4 client on a dual-stack socket shows up as ::ffff:a.b.c.d.
        let client = client.to_canonical();
        self.by_source
            .iter()
            .find(|(net, _)| net.contains(&client))
            .map(|(_, s)| s.clone())
    }

    /// Every declared sandbox, by id.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Arc<Sandbox>> {
        self.by_id.values().map(|e| &e.sandbox)
    }
}

/// The run-time sandboxes' part in identification (the control plane's).
pub(crate) trait RunTime {
    /// The sandbox a signed credential stands for, if it verifies and the sandbox is neither revoked nor
    /// expired.
    fn verify(&self, id: &str, credential: &str) -> Result<Arc<Sandbox>, AuthFailure>;
    /// The live run-time sandbox known by this source address, if any.
    fn by_source(&self, client: IpAddr) -> Option<Arc<Sandbox>>;
}

/// Identify the sender of one request from what its `Proxy-Authorization` said ([`credentials`]): a
/// run-time sandbox by its signed credential, a declared one by token, or, without credentials, the declared
/// sandbox whose source range holds `client`.
pub(crate) fn identify(
    declared: &Identities,
    run_time: &dyn RunTime,
    credentials: &Result<Option<(String, String)>, AuthFailure>,
    client: IpAddr,
) -> Result<Arc<Sandbox>, AuthFailure> {
    match credentials.as_ref().map_err(|e| *e)? {
        Some((id, secret)) if signed::looks_signed(secret) => {
            let sandbox = run_time.verify(id, secret)?;
            if declared.named(id).is_some() {
                // SECURITY: a declared sandbox's id cannot be claimed with a run-time credential.
                return Err(AuthFailure::Invalid);
            }
            Ok(sandbox)
        }
        Some((id, secret)) => declared.by_id_token(id, secret),
        None => declared
            .by_source(client)
            .or_else(|| run_time.by_source(client))
            .ok_or(AuthFailure::Missing),
    }
}

/// The credentials of one request: `Basic` id and token, none (identify by source address), or refused.
pub(crate) fn credentials(headers: &HeaderMap) -> Result<Option<(String, String)>, AuthFailure> {
    let mut values = headers.get_all(PROXY_AUTHORIZATION).iter();
    match (values.next(), values.next()) {
        // SECURITY: two credentials could be judged differently by two parsers; refuse rather than pick one.
        (Some(_), Some(_)) => Err(AuthFailure::Malformed),
        (Some(value), None) => parse_basic(value.as_bytes()).map(Some).ok_or(AuthFailure::Malformed),
        (None, _) => Ok(None),
    }
}

/// `Basic base64(id:token)` -> (id, token). The scheme is case-insensitive (RFC 9110 §11.1); only HTTP's
/// whitespace (space, tab) may surround the parts, not any Unicode space.
fn parse_basic(value: &[u8]) -> Option<(String, String)> {
    const OWS: [char; 2] = [' ', '\t'];
    let text = std::str::from_utf8(value).ok()?.trim_matches(OWS);
    let (scheme, rest) = text.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(rest.trim_matches(OWS))
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (id, token) = decoded.split_once(':')?;
    if id.is_empty() || token.is_empty() {
        return None;
    }
    Some((id.to_string(), token.to_string()))
}

/// The hex SHA-256 of a token, as written in `token_sha256`.
pub fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
