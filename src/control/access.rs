//! Access requests: what a sandbox asked for from inside (rules past its policy, up to its boundary), and the
//! grants made of them. Kept in memory by this replica (a policy offers asking only where the store is not
//! shared, see `config::access`). A grant belongs to one incarnation of its sandbox (a later sandbox given the same
//! id is another) and ends at its lifetime; the generation turns the live grants into the policy the sandbox runs
//! under (`generation::access`).

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use serde::Serialize;
use serde_json::Value;

use crate::identity::Sandbox;
use crate::locks::Unpoisoned;
use crate::names::SandboxId;

/// The most requests one sandbox may have waiting at once.
pub(crate) const MOST_PENDING_PER_SANDBOX: usize = 5;
/// The most requests kept at once (waiting, granted and decided), over all sandboxes.
const MOST_KEPT: usize = 2_000;
/// How long a request nobody decided waits before it lapses.
pub(crate) const PENDING_FOR: i64 = 24 * 3600;
/// How long an ended request (denied, expired, revoked, lapsed) stays listed.
const ENDED_KEPT: i64 = 24 * 3600;

/// Where a request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum AccessState {
    /// Waiting for a person.
    Pending,
    /// Granted: its rules are part of the sandbox's policy until `expires_at`.
    Granted,
    /// Refused by a person.
    Denied,
    /// Granted, and its lifetime ended.
    Expired,
    /// Granted, and ended early by a person.
    Revoked,
    /// Never decided, and its wait ended (or its sandbox is gone).
    Lapsed,
}

impl AccessState {
    /// The name the API uses.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            AccessState::Pending => "pending",
            AccessState::Granted => "granted",
            AccessState::Denied => "denied",
            AccessState::Expired => "expired",
            AccessState::Revoked => "revoked",
            AccessState::Lapsed => "lapsed",
        }
    }
}

/// One thing a request would add to what its sandbox may do (a finding of the ceiling's check).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Addition {
    /// What kind of thing: `destination`, `port`, `method`, `path`, `MCP tool`, `GraphQL operation`...
    pub(crate) kind: String,
    /// The rule's field (`allow[0].paths`).
    pub(crate) path: String,
    /// In words.
    pub(crate) message: String,
    /// A request it would let through that is refused now.
    pub(crate) example: Option<String>,
}

/// One access request, as the sandbox, the admin API, the console and `cordon approvals` see it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct AccessRequest {
    /// `ar-` and 16 hex digits.
    pub(crate) id: String,
    /// Whose (and which incarnation).
    #[serde(skip)]
    pub(crate) who: Arc<Sandbox>,
    /// The sandbox's id.
    pub(crate) sandbox: String,
    /// The sandbox's user.
    pub(crate) user: String,
    /// The policy it runs under (whose boundary holds what it may be granted).
    pub(crate) policy: String,
    /// The rules asked for, as written (a policy's `allow:` entries).
    pub(crate) allow: Value,
    /// Why, in the sandbox's words.
    pub(crate) reason: String,
    /// How long a grant lasts, in seconds.
    pub(crate) lifetime_seconds: u64,
    /// What it would add, each with a request that shows it.
    pub(crate) adds: Vec<Addition>,
    /// Whether a request it lets through might carry one of the policy's credentials.
    pub(crate) reaches_credentials: bool,
    /// Where it stands.
    pub(crate) state: AccessState,
    /// When it was filed (RFC 3339).
    pub(crate) filed_at: String,
    /// Who decided (a person's principal, or `cordon` for an automatic grant or an ending).
    pub(crate) decided_by: Option<String>,
    /// When it was decided (RFC 3339).
    pub(crate) decided_at: Option<String>,
    /// For a grant: when it ends (RFC 3339).
    pub(crate) expires_at: Option<String>,
    /// Unix seconds of filing.
    #[serde(skip)]
    pub(crate) filed: i64,
    /// Unix seconds of the grant's end, or of the request's (denied, lapsed): what it is listed a day after.
    #[serde(skip)]
    pub(crate) expires: Option<i64>,
}

/// Why a request was not filed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotFiled {
    /// The sandbox asked more often than its policy's `per_hour`.
    TooOften(u32),
    /// The sandbox has this many waiting already.
    TooManyWaiting,
    /// The book is full.
    Full,
}

/// Why a decision was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotDecided {
    /// No such request.
    Unknown,
    /// It is not in the state the decision needs (it says which it is in).
    State(AccessState),
}

/// The requests this replica keeps, and the rate each sandbox asks at.
pub(crate) struct AccessBook {
    list: Mutex<Vec<AccessRequest>>,
    /// How many are granted now (the hot path skips the lock when none is).
    granted: AtomicUsize,
    /// One limiter per `per_hour` figure in use, keyed by sandbox id.
    rates: Mutex<HashMap<NonZeroU32, Arc<DefaultKeyedRateLimiter<String>>>>,
}

impl Default for AccessBook {
    fn default() -> Self {
        AccessBook {
            list: Mutex::new(Vec::new()),
            granted: AtomicUsize::new(0),
            rates: Mutex::new(HashMap::new()),
        }
    }
}

impl AccessBook {
    /// A fresh id, `ar-` and 16 hex digits.
    pub(crate) fn fresh_id() -> String {
        use ring::rand::SecureRandom;
        let mut bytes = [0u8; 8];
        let rng = ring::rand::SystemRandom::new();
        if rng.fill(&mut bytes).is_err() {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default();
            bytes = (nanos as u64).to_be_bytes();
        }
        format!("ar-{}", hex::encode(bytes))
    }

    /// Count one request of `sandbox` against `per_hour`; `Err` when it asks too often.
    pub(crate) fn count(&self, sandbox: &SandboxId, per_hour: NonZeroU32) -> Result<(), NotFiled> {
        let limiter = self
            .rates
            .lock()
            .unpoisoned()
            .entry(per_hour)
            .or_insert_with(|| Arc::new(RateLimiter::keyed(Quota::per_hour(per_hour))))
            .clone();
        limiter
            .check_key(&sandbox.as_str().to_string())
            .map_err(|_| NotFiled::TooOften(per_hour.get()))
    }

    /// Keep `request` (already counted, judged and, for an automatic grant, granted).
    pub(crate) fn file(&self, request: AccessRequest, now: i64) -> Result<(), NotFiled> {
        let mut list = self.list.lock().unpoisoned();
        self.sweep_locked(&mut list, now);
        if request.state == AccessState::Pending
            && list
                .iter()
                .filter(|r| r.state == AccessState::Pending && r.who.incarnation() == request.who.incarnation())
                .count()
                >= MOST_PENDING_PER_SANDBOX
        {
            return Err(NotFiled::TooManyWaiting);
        }
        if list.len() >= MOST_KEPT {
            return Err(NotFiled::Full);
        }
        if request.state == AccessState::Granted {
            self.granted.fetch_add(1, Ordering::SeqCst);
        }
        list.push(request);
        drop(list);
        Ok(())
    }

    /// Every request kept, oldest first (ended ones for a day).
    pub(crate) fn list(&self, now: i64) -> Vec<AccessRequest> {
        let mut list = self.list.lock().unpoisoned();
        self.sweep_locked(&mut list, now);
        list.clone()
    }

    /// Request `id`.
    pub(crate) fn get(&self, id: &str, now: i64) -> Option<AccessRequest> {
        self.list(now).into_iter().find(|r| r.id == id)
    }

    /// Grant (`true`) or deny a pending request, as `by`.
    pub(crate) fn decide(&self, id: &str, grant: bool, by: &str, now: i64) -> Result<AccessRequest, NotDecided> {
        self.change(id, now, |r| {
            if r.state != AccessState::Pending {
                return Err(NotDecided::State(r.state));
            }
            r.state = if grant {
                AccessState::Granted
            } else {
                AccessState::Denied
            };
            r.decided_by = Some(by.to_string());
            r.decided_at = Some(crate::rfc3339::unix_seconds(now));
            if grant {
                let end = now.saturating_add(i64::try_from(r.lifetime_seconds).unwrap_or(i64::MAX));
                r.expires = Some(end);
                r.expires_at = Some(crate::rfc3339::unix_seconds(end));
            } else {
                // Ended now: listed for a day from now.
                r.expires = Some(now);
            }
            Ok(())
        })
    }

    /// End a grant early, as `by`.
    pub(crate) fn revoke(&self, id: &str, by: &str, now: i64) -> Result<AccessRequest, NotDecided> {
        self.change(id, now, |r| {
            if r.state != AccessState::Granted {
                return Err(NotDecided::State(r.state));
            }
            r.state = AccessState::Revoked;
            r.decided_by = Some(by.to_string());
            r.decided_at = Some(crate::rfc3339::unix_seconds(now));
            r.expires = Some(now);
            r.expires_at = Some(crate::rfc3339::unix_seconds(now));
            Ok(())
        })
    }

    fn change(
        &self,
        id: &str,
        now: i64,
        f: impl FnOnce(&mut AccessRequest) -> Result<(), NotDecided>,
    ) -> Result<AccessRequest, NotDecided> {
        let mut list = self.list.lock().unpoisoned();
        self.sweep_locked(&mut list, now);
        let r = list.iter_mut().find(|r| r.id == id).ok_or(NotDecided::Unknown)?;
        let was = r.state;
        f(r)?;
        match (was, r.state) {
            (AccessState::Granted, s) if s != AccessState::Granted => {
                self.granted.fetch_sub(1, Ordering::SeqCst);
            }
            (w, AccessState::Granted) if w != AccessState::Granted => {
                self.granted.fetch_add(1, Ordering::SeqCst);
            }
            _ => {}
        }
        let out = r.clone();
        drop(list);
        Ok(out)
    }

    /// The live grants of `sandbox` (this incarnation), oldest first: `(id, rules as asked)`. The hot path: no
    /// lock is taken while nothing is granted anywhere.
    pub(crate) fn granted(&self, sandbox: &Sandbox, now: i64) -> Vec<(String, Value)> {
        if self.granted.load(Ordering::SeqCst) == 0 {
            return Vec::new();
        }
        let list = self.list.lock().unpoisoned();
        list.iter()
            .filter(|r| {
                r.state == AccessState::Granted
                    && r.expires.is_some_and(|e| e > now)
                    // SECURITY: a grant belongs to the incarnation it was given to: a later sandbox given the
                    // same id does not inherit it.
                    && r.who.incarnation() == sandbox.incarnation()
            })
            .map(|r| (r.id.clone(), r.allow.clone()))
            .collect()
    }

    /// End what is over: grants past their lifetime, requests nobody decided within [`PENDING_FOR`], and
    /// anything of a sandbox for which `alive` says no. Returns whether anything changed.
    pub(crate) fn sweep(&self, now: i64, alive: impl Fn(&Sandbox) -> bool) -> bool {
        let mut list = self.list.lock().unpoisoned();
        let mut changed = self.sweep_locked(&mut list, now);
        for r in list.iter_mut() {
            if matches!(r.state, AccessState::Pending | AccessState::Granted) && !alive(&r.who) {
                if r.state == AccessState::Granted {
                    // Ended with its sandbox: who granted it stays on the record; it ends now.
                    self.granted.fetch_sub(1, Ordering::SeqCst);
                    r.state = AccessState::Expired;
                    r.expires = Some(now);
                    r.expires_at = Some(crate::rfc3339::unix_seconds(now));
                } else {
                    r.state = AccessState::Lapsed;
                    r.expires = Some(now);
                    r.decided_by = Some(crate::principal::CORDON.to_string());
                    r.decided_at = Some(crate::rfc3339::unix_seconds(now));
                }
                changed = true;
            }
        }
        drop(list);
        changed
    }

    fn sweep_locked(&self, list: &mut Vec<AccessRequest>, now: i64) -> bool {
        let mut changed = false;
        for r in list.iter_mut() {
            match r.state {
                AccessState::Granted if r.expires.is_some_and(|e| e <= now) => {
                    r.state = AccessState::Expired;
                    self.granted.fetch_sub(1, Ordering::SeqCst);
                    changed = true;
                }
                AccessState::Pending if now.saturating_sub(r.filed) >= PENDING_FOR => {
                    r.state = AccessState::Lapsed;
                    r.expires = Some(now);
                    r.decided_by = Some(crate::principal::CORDON.to_string());
                    r.decided_at = Some(crate::rfc3339::unix_seconds(now));
                    changed = true;
                }
                _ => {}
            }
        }
        let before = list.len();
        list.retain(|r| {
            matches!(r.state, AccessState::Pending | AccessState::Granted)
                || now.saturating_sub(r.expires.unwrap_or(r.filed).max(r.filed)) < ENDED_KEPT
        });
        changed || list.len() != before
    }
}

#[cfg(test)]
#[path = "access_tests.rs"]
mod tests;
