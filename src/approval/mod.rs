//! Human approval of held requests. A policy rule with `action: ask` makes cordon hold the request, record a pending
//! approval here, announce it to an optional webhook and wait, up to a timeout, for a person to allow or deny it
//! through the admin API. An allow with scope `always` becomes a standing grant: the same request from the same
//! sandbox then passes without asking.
//!
//! Nothing here is secret: an [`Ask`] describes the request as the sandbox sent it, before cordon attaches any
//! credential of its own.

mod types;
pub mod webhook;

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use types::clean;
pub(crate) use types::{Ask, DecideError, Decision, Grant, MAX_EXCERPT, Outcome, Pending, Scope, Verdict, excerpt};
use webhook::Webhook;

/// The longest `by` accepted, in characters.
const MAX_BY: usize = 128;
/// Who decides when cordon itself ends an ask (its sandbox is gone).
const CORDON: &str = "cordon";

/// A registered ask: what the API shows, and how to wake the request waiting for it.
struct Entry {
    seq: u64,
    pending: Pending,
    wake: oneshot::Sender<Decision>,
    /// The webhook announcement, so that the decision is announced after it.
    announced: Option<JoinHandle<bool>>,
}

#[derive(Default)]
struct State {
    seq: u64,
    pending: HashMap<String, Entry>,
    /// In the order granted.
    grants: Vec<Grant>,
}

/// The approvals registry: pending asks and standing grants. Shared through `Arc`; every method may be called from
/// any task at any time.
pub struct Approvals {
    max_pending: usize,
    timeout: Duration,
    webhook: Option<Arc<Webhook>>,
    state: Mutex<State>,
}

impl Approvals {
    /// Set up as `config` says: its bounds, and the webhook (with its signing `secret`, and a client that
    /// trusts `extra_roots` beside the built-in roots) that announces each pending request.
    pub(crate) fn configured(
        config: &crate::config::ApprovalConfig,
        extra_roots: &[rustls_pki_types::CertificateDer<'static>],
        secret: Option<secrecy::SecretString>,
    ) -> Result<Approvals, String> {
        let webhook = match &config.webhook {
            None => None,
            Some(w) => {
                let client = crate::upstream::outbound::HttpClient::new(extra_roots)?;
                Some(Webhook::new(w.url.clone(), secret, client))
            }
        };
        Ok(Approvals::new(config.max_pending, config.timeout, webhook))
    }

    /// A registry holding at most `max_pending` asks at once, each waiting at most `timeout`, announced to `webhook`.
    pub(crate) fn new(max_pending: usize, timeout: Duration, webhook: Option<Webhook>) -> Approvals {
        Approvals {
            max_pending,
            timeout,
            webhook: webhook.map(Arc::new),
            state: Mutex::new(State::default()),
        }
    }

    /// Ask and wait. A standing grant covering the request answers at once ([`Outcome::Granted`]); otherwise the ask
    /// is registered under a fresh id, announced to the webhook (in the background), and waits for a decision or
    /// the timeout. Dropping the returned future withdraws the ask.
    pub(crate) async fn ask(&self, ask: Ask) -> Outcome {
        let ask = Ask {
            excerpt: clean(&ask.excerpt),
            ..ask
        };
        let started = Instant::now();
        let (wake, mut woken) = oneshot::channel();
        let id = {
            let mut state = self.state();
            if let Some(grant) = state.grants.iter().find(|g| covers(g, &ask)) {
                tracing::debug!(grant = %grant.id, sandbox = %ask.sandbox, "approval: a standing grant covers it");
                return Outcome::Granted {
                    grant: grant.id.clone(),
                };
            }
            if state.pending.len() >= self.max_pending {
                tracing::warn!(sandbox = %ask.sandbox, max = self.max_pending, "approval: too many pending, refused");
                return Outcome::Full;
            }
            state.seq += 1;
            let seq = state.seq;
            let id = fresh_id("ap-", seq, |id| state.pending.contains_key(id));
            let now = SystemTime::now();
            let pending = Pending {
                id: id.clone(),
                ask,
                asked_at: rfc3339(now),
                expires_at: rfc3339(now.checked_add(self.timeout).unwrap_or(now)),
            };
            let announced = self.spawn_webhook({
                let pending = pending.clone();
                move |hook| async move { hook.announce(&pending).await }
            });
            tracing::debug!(id = %id, sandbox = %pending.ask.sandbox, "approval: asked");
            let entry = Entry {
                seq,
                pending,
                wake,
                announced,
            };
            state.pending.insert(id.clone(), entry);
            id
        };
        let _withdraw = Withdraw {
            approvals: self,
            id: id.clone(),
        };
        let decision = match tokio::time::timeout(self.timeout, &mut woken).await {
            Ok(Ok(decision)) => Some(decision),
            // Timed out, unless a decision came in meanwhile: `decide` takes the entry and wakes under the lock.
            _ => match self.state().pending.remove(&id) {
                Some(_) => None,
                None => woken.try_recv().ok(),
            },
        };
        let waited = started.elapsed();
        match decision {
            Some(decision) if decision.verdict == Verdict::Allow => Outcome::Allowed { id, decision, waited },
            Some(decision) => Outcome::Denied { id, decision, waited },
            None => {
                tracing::debug!(id = %id, "approval: timed out");
                Outcome::TimedOut { id, waited }
            }
        }
    }

    /// Every pending approval, oldest first.
    pub fn pending(&self) -> Vec<Pending> {
        let state = self.state();
        let mut entries: Vec<&Entry> = state.pending.values().collect();
        entries.sort_by_key(|e| e.seq);
        entries.into_iter().map(|e| e.pending.clone()).collect()
    }

    /// Decide one pending approval and wake its request. `by` names who decided (1-128 characters, no control
    /// characters); an allow with scope `always` also creates a [`Grant`]; a deny cannot be `always`. Returns the
    /// pending approval as it was.
    pub(crate) fn decide(&self, id: &str, verdict: Verdict, scope: Scope, by: &str) -> Result<Pending, DecideError> {
        if by.trim().is_empty() || by.chars().count() > MAX_BY || by.chars().any(char::is_control) {
            return Err(DecideError::Invalid(format!(
                "by must name who decides in 1-{MAX_BY} characters without control characters"
            )));
        }
        if verdict == Verdict::Deny && scope == Scope::Always {
            return Err(DecideError::Invalid(
                "always applies to allow only; add a policy rule to refuse for good".to_string(),
            ));
        }
        let decision = Decision {
            verdict,
            scope,
            by: by.to_string(),
            at: rfc3339(SystemTime::now()),
        };
        let (pending, announced) = {
            let mut state = self.state();
            let not_found = || DecideError::NotFound(id.to_string());
            let entry = state.pending.remove(id).ok_or_else(not_found)?;
            // Fails only if the request went away just now (its withdrawal is waiting for the lock).
            entry.wake.send(decision.clone()).map_err(|_| not_found())?;
            if verdict == Verdict::Allow && scope == Scope::Always {
                let grant = state.grant(&entry.pending, &decision);
                tracing::info!(grant = %grant, approval = %id, by = %by, "approval: standing grant created");
            }
            (entry.pending, entry.announced)
        };
        tracing::info!(id = %id, sandbox = %pending.ask.sandbox, ?verdict, ?scope, by = %by, "approval: decided");
        self.announce_decision(&pending, decision, announced);
        Ok(pending)
    }

    /// Every standing grant, oldest first.
    pub(crate) fn grants(&self) -> Vec<Grant> {
        self.state().grants.clone()
    }

    /// Remove a grant; false if unknown.
    pub(crate) fn revoke_grant(&self, id: &str) -> bool {
        let mut state = self.state();
        let before = state.grants.len();
        state.grants.retain(|g| g.id != id);
        let revoked = state.grants.len() != before;
        if revoked {
            tracing::info!(grant = %id, "approval: standing grant revoked");
        }
        revoked
    }

    /// Drop everything of a sandbox that is gone: its grants, and its pending asks, which end as denied by "cordon".
    pub(crate) fn forget_sandbox(&self, sandbox: &str) {
        let decision = Decision {
            verdict: Verdict::Deny,
            scope: Scope::Once,
            by: CORDON.to_string(),
            at: rfc3339(SystemTime::now()),
        };
        let ended: Vec<(Pending, Option<JoinHandle<bool>>)> = {
            let mut state = self.state();
            state.grants.retain(|g| g.sandbox != sandbox);
            state
                .pending
                .extract_if(|_, e| e.pending.ask.sandbox == sandbox)
                .filter_map(|(_, e)| e.wake.send(decision.clone()).ok().map(|()| (e.pending, e.announced)))
                .collect()
        };
        for (pending, announced) in ended {
            tracing::info!(id = %pending.id, sandbox = %sandbox, "approval: denied, the sandbox is gone");
            self.announce_decision(&pending, decision.clone(), announced);
        }
    }

    /// Number pending (for a metrics gauge).
    pub fn pending_count(&self) -> usize {
        self.state().pending.len()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Announce a decision once the announcement of the ask itself is done, so that a receiver sees them in order.
    fn announce_decision(&self, pending: &Pending, decision: Decision, announced: Option<JoinHandle<bool>>) {
        let pending = pending.clone();
        self.spawn_webhook(move |hook| async move {
            if let Some(announced) = announced {
                let _ = announced.await;
            }
            hook.decided(&pending, &decision).await
        });
    }

    /// Run `call` with the webhook in the background, if there is a webhook (and a runtime to run it on).
    fn spawn_webhook<F, Fut>(&self, call: F) -> Option<JoinHandle<bool>>
    where
        F: FnOnce(Arc<Webhook>) -> Fut,
        Fut: Future<Output = bool> + Send + 'static,
    {
        let hook = self.webhook.clone()?;
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => Some(runtime.spawn(call(hook))),
            Err(_) => {
                tracing::warn!("approval webhook not called: no async runtime");
                None
            }
        }
    }
}

impl State {
    /// Record a standing grant for the request of `pending` (or find the identical one); returns its id.
    fn grant(&mut self, pending: &Pending, decision: &Decision) -> String {
        if let Some(existing) = self.grants.iter().find(|g| covers(g, &pending.ask)) {
            return existing.id.clone();
        }
        self.seq += 1;
        let id = fresh_id("gr-", self.seq, |id| self.grants.iter().any(|g| g.id == id));
        let ask = &pending.ask;
        self.grants.push(Grant {
            id: id.clone(),
            sandbox: ask.sandbox.clone(),
            method: ask.method.clone(),
            host: ask.host.clone(),
            port: ask.port,
            path: ask.path.clone(),
            by: decision.by.clone(),
            at: decision.at.clone(),
            approval: pending.id.clone(),
        });
        id
    }
}

/// Withdraws an ask when its waiting ends in any way, including the future being dropped.
struct Withdraw<'a> {
    approvals: &'a Approvals,
    id: String,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if self.approvals.state().pending.remove(&self.id).is_some() {
            tracing::debug!(id = %self.id, "approval: withdrawn (the request went away)");
        }
    }
}

/// Whether `grant` covers `ask`: the same sandbox, method, host (ASCII case aside), port and path.
fn covers(grant: &Grant, ask: &Ask) -> bool {
    grant.sandbox == ask.sandbox
        && grant.method == ask.method
        && grant.host.eq_ignore_ascii_case(&ask.host)
        && grant.port == ask.port
        && grant.path == ask.path
}

/// `prefix` and 16 random hex digits, not `taken`. Should the system generator fail, `seq` stands in (still unique).
fn fresh_id(prefix: &str, seq: u64, taken: impl Fn(&str) -> bool) -> String {
    use ring::rand::SecureRandom;
    let rng = ring::rand::SystemRandom::new();
    loop {
        let mut bytes = [0u8; 8];
        let id = match rng.fill(&mut bytes) {
            Ok(()) => format!("{prefix}{}", hex::encode(bytes)),
            Err(_) => format!("{prefix}{seq:016x}"),
        };
        if !taken(&id) {
            return id;
        }
    }
}

/// RFC 3339 to the second, clamped to what the format can show.
fn rfc3339(t: SystemTime) -> String {
    const LAST: Duration = Duration::from_secs(253_402_300_799); // 9999-12-31T23:59:59Z
    let since = t.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO).min(LAST);
    humantime::format_rfc3339_seconds(UNIX_EPOCH + since).to_string()
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
