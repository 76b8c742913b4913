//! Who is signed in to the console. A session is a random cookie (kept here only as its SHA-256) with the
//! principal it stands for, the CSRF token every form of it must carry, when it ends, and its place: a random
//! path (`/console/s/PLACE/`) under which its pages live and to which alone the browser sends its cookie. A
//! browser sends a host's cookies to every port of that host, so a server on another port of the console's host
//! would otherwise receive the session with any request the browser makes to it; it receives it now only for
//! requests under a place it cannot know. A sign-in through
//! the identity provider under way is kept by its `state`, bound to the browser that started it by a cookie
//! of its own, for ten minutes at most. Both are bounded in number, so a flood of sign-ins cannot grow them.
//!
//! Sessions live in this replica's memory: a restart signs everyone out, and replicas behind one address
//! need the load balancer to keep a person on one replica (or people sign in on each).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use cookie::{Cookie, SameSite};
use http::HeaderMap;
use http::header::COOKIE;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::oidc::Flow;
use crate::principal::Principal;

/// Sessions kept at most at once (the oldest go first).
const MOST_SESSIONS: u64 = 10_000;
/// Sign-ins under way kept at most at once.
const MOST_FLOWS: u64 = 10_000;
/// How long a sign-in through the provider may take.
const FLOW_TTL: Duration = Duration::from_secs(600);

/// One signed-in person or token holder.
#[derive(Debug)]
pub(super) struct Session {
    /// Who, as at sign-in (the roles in force are found again at each request: [`Proof`]).
    pub(super) principal: Principal,
    /// How they signed in.
    pub(super) proof: Proof,
    /// The token every form of this session carries.
    pub(super) csrf: String,
    /// The random path segment under which the session's pages live (`/console/s/{place}/`), its cookie's path.
    pub(super) place: String,
    /// When it ends.
    pub(super) ends: SystemTime,
}

/// How a session's principal proved itself, kept so that its roles are found again at each request (a reload
/// may remove a token, change a token's roles, or change what a person's groups give).
#[derive(Debug, Clone)]
pub(super) enum Proof {
    /// An admin token, by its SHA-256.
    Token([u8; 32]),
    /// A person signed in through OpenID Connect, with the values their roles claim held.
    Person(Vec<String>),
}

/// A sign-in through the provider under way.
struct SignInStarted {
    flow: Flow,
    /// The SHA-256 of the cookie that binds it to the browser that started it.
    browser: [u8; 32],
}

/// The names of the console's cookies. Over TLS: the sign-in cookies `__Host-` (Secure, Path=/, no Domain: no
/// other host can set them) and the session `__Secure-` (its path is its place, which `__Host-` does not allow);
/// plain on loopback HTTP.
#[derive(Clone, Copy)]
pub(super) struct CookieNames {
    pub(super) session: &'static str,
    pub(super) flow: &'static str,
    pub(super) form: &'static str,
    secure: bool,
}

impl CookieNames {
    pub(super) fn new(tls: bool) -> CookieNames {
        if tls {
            CookieNames {
                session: "__Secure-cordon_console",
                flow: "__Host-cordon_signin",
                form: "__Host-cordon_form",
                secure: true,
            }
        } else {
            CookieNames {
                session: "cordon_console",
                flow: "cordon_signin",
                form: "cordon_form",
                secure: false,
            }
        }
    }

    /// A `Set-Cookie` value: `name=value`, HttpOnly, Path=/, `same_site`, living `life` (zero: removed).
    pub(super) fn set(&self, name: &'static str, value: &str, same_site: SameSite, life: Duration) -> String {
        self.set_at(name, value, same_site, life, "/")
    }

    /// The session's `Set-Cookie` value: sent by the browser only under its place, `Strict`.
    pub(super) fn session(&self, value: &str, place: &str, life: Duration) -> String {
        self.set_at(self.session, value, SameSite::Strict, life, &path_of(place))
    }

    /// A `Set-Cookie` value as [`CookieNames::set`] with the path `path`.
    fn set_at(&self, name: &'static str, value: &str, same_site: SameSite, life: Duration, path: &str) -> String {
        Cookie::build((name, value.to_owned()))
            .path(path.to_owned())
            .http_only(true)
            .secure(self.secure)
            .same_site(same_site)
            .max_age(cookie::time::Duration::seconds(
                i64::try_from(life.as_secs()).unwrap_or(i64::MAX),
            ))
            .build()
            .to_string()
    }
}

/// The value of the cookie `name` the request carries (the first, if several).
pub(super) fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|h| h.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == name)
        .map(|c| c.value().to_owned())
}

/// The path a session's cookie is sent to, and under which its pages live (without the trailing slash, so that
/// it matches the place itself and everything below it).
pub(super) fn path_of(place: &str) -> String {
    format!("/console/s/{place}")
}

/// A fresh random value: 32 bytes, as hex.
pub(super) fn random() -> Result<String, String> {
    crate::secret_file::random_hex(32)
}

fn digest(value: &str) -> [u8; 32] {
    Sha256::digest(value.as_bytes()).into()
}

/// Whether `a` and `b` are the same, compared in constant time.
pub(super) fn same(a: &str, b: &str) -> bool {
    !a.is_empty() && bool::from(digest(a).ct_eq(&digest(b)))
}

/// The sessions and the sign-ins under way.
pub(super) struct SignIns {
    sessions: moka::sync::Cache<[u8; 32], Arc<Session>>,
    flows: moka::sync::Cache<String, Arc<SignInStarted>>,
    /// How long a session lasts.
    pub(super) ttl: Duration,
}

impl SignIns {
    pub(super) fn new(ttl: Duration) -> SignIns {
        SignIns {
            sessions: moka::sync::Cache::builder()
                .max_capacity(MOST_SESSIONS)
                .time_to_live(ttl)
                .build(),
            flows: moka::sync::Cache::builder()
                .max_capacity(MOST_FLOWS)
                .time_to_live(FLOW_TTL)
                .build(),
            ttl,
        }
    }

    /// Open a session for `principal`: the cookie's value, and the session.
    pub(super) fn open(&self, principal: Principal, proof: Proof) -> Result<(String, Arc<Session>), String> {
        let value = random()?;
        let session = Arc::new(Session {
            principal,
            proof,
            csrf: random()?,
            place: crate::secret_file::random_hex(16)?,
            ends: SystemTime::now() + self.ttl,
        });
        self.sessions.insert(digest(&value), session.clone());
        Ok((value, session))
    }

    /// The live session whose cookie value is `value`.
    pub(super) fn get(&self, value: &str) -> Option<Arc<Session>> {
        let s = self.sessions.get(&digest(value))?;
        (s.ends > SystemTime::now()).then_some(s)
    }

    /// End the session whose cookie value is `value`.
    pub(super) fn close(&self, value: &str) {
        self.sessions.invalidate(&digest(value));
    }

    /// Keep `flow`, bound to the browser whose flow cookie is `browser`.
    pub(super) fn started(&self, flow: Flow, browser: &str) {
        let state = flow.state.clone();
        self.flows.insert(
            state,
            Arc::new(SignInStarted {
                flow,
                browser: digest(browser),
            }),
        );
    }

    /// The sign-in `state` names, taken (a `state` answers once), if the browser presenting the flow cookie
    /// `browser` is the one that started it.
    pub(super) fn finish(&self, state: &str, browser: Option<&str>) -> Result<Flow, &'static str> {
        let started = self
            .flows
            .remove(state)
            .ok_or("this sign-in is unknown or over (it lasts ten minutes and answers once); sign in again")?;
        // SECURITY: a sign-in finishes only in the browser that started it, so nobody can have a victim's
        // browser complete a sign-in the attacker started (and be signed in as the attacker).
        match browser {
            Some(b) if bool::from(digest(b).ct_eq(&started.browser)) => Ok(started.flow.clone()),
            _ => Err("this sign-in was started in another browser (its cookie is missing); sign in again"),
        }
    }
}

#[cfg(test)]
#[path = "sessions_tests.rs"]
mod tests;
