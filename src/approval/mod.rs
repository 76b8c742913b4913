//! Human approval of held requests. A policy rule with `action: ask` makes cordon hold the request, record a pending
//! approval here, announce it to an optional webhook and wait, up to a timeout, for a person to allow or deny it
//! through the admin API. An allow with scope `always` or `exact` becomes a standing grant: the same request from
//! the same sandbox then passes without asking (see [`Reach`]).
//!
//! Nothing here is secret: a [`HeldRequest`] describes the request as the sandbox sent it, before cordon attaches any
//! credential of its own, with the sandbox's own credentials and placeholders redacted.
//!
//! Pending asks are bounded three ways: per sandbox, per user, and overall, so that one sandbox cannot fill the
//! queue every other sandbox's asks need. Asks and grants belong to one incarnation of a sandbox and to the rule
//! that asked: [`Approvals::sweep`] ends them when either is gone.

mod announce;
mod grants;
mod ids;
mod shared;
mod shared_grants;
mod shown;
mod types;

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::identity::Sandbox;
use crate::locks::Unpoisoned;

use crate::names::SandboxId;
use crate::webhook::Webhook;
use grants::Grants;
use ids::fresh_id;
pub(crate) use shared::{SharedApprovals, Written};
pub(crate) use shown::{excerpt, unmisleading};
pub(crate) use types::{
    Approval, BodySeen, DecideError, Grant, Header, HeldRequest, HumanDecision, Over, Reach, Resolution, Ruling,
    ToolCall,
};

/// The longest `by` accepted, in characters.
const MAX_BY: usize = 128;
/// Who decides when cordon itself ends an ask (its sandbox is gone).
const CORDON: &str = crate::principal::CORDON;

/// A registered ask: what the API shows, and how to wake the request waiting for it.
struct RegisteredAsk {
    seq: u64,
    pending: Approval,
    wake: oneshot::Sender<HumanDecision>,
    /// The webhook announcement, so that the decision is announced after it.
    announced: Option<JoinHandle<bool>>,
    /// When it times out.
    deadline: Instant,
}

#[derive(Default)]
struct ApprovalState {
    seq: u64,
    pending: HashMap<String, RegisteredAsk>,
    /// The standing grants.
    grants: Grants,
}

/// The approvals registry: pending asks and standing grants. Shared through `Arc`; every method may be called from
/// any task at any time.
pub struct Approvals {
    max_pending: usize,
    per_sandbox: usize,
    per_user: usize,
    timeout: Duration,
    webhook: Option<Arc<Webhook>>,
    state: Mutex<ApprovalState>,
    /// Where asks are shared with other replicas (a PostgreSQL store), if anywhere.
    shared: Option<Arc<SharedApprovals>>,
    /// Counts every change of the pending asks (asked, decided, withdrawn, timed out), for the console.
    changes: tokio::sync::watch::Sender<u64>,
}

impl Approvals {
    /// Set up as `config` says: its bounds, and the `webhook` that announces each pending request and decision.
    pub(crate) fn configured(config: &crate::config::ApprovalConfig, webhook: Option<Arc<Webhook>>) -> Approvals {
        Approvals::new(config.max_pending, config.timeout, webhook)
            .with_caps(config.max_pending_per_sandbox, config.max_pending_per_user)
    }

    /// A registry holding at most `max_pending` asks at once (however many of one sandbox or user: see
    /// [`Approvals::with_caps`]), each waiting at most `timeout`, announced to `webhook`.
    pub(crate) fn new(max_pending: usize, timeout: Duration, webhook: Option<Arc<Webhook>>) -> Approvals {
        Approvals {
            max_pending,
            per_sandbox: usize::MAX,
            per_user: usize::MAX,
            timeout,
            webhook,
            state: Mutex::new(ApprovalState::default()),
            shared: None,
            changes: tokio::sync::watch::Sender::new(0),
        }
    }

    /// Told of every change of the pending asks.
    pub(crate) fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn changed(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The same registry sharing its asks through `shared`.
    pub(crate) fn with_shared(self, shared: SharedApprovals) -> Approvals {
        Approvals {
            shared: Some(Arc::new(shared)),
            ..self
        }
    }

    /// Where asks are shared, if anywhere.
    pub(crate) fn shared(&self) -> Option<&Arc<SharedApprovals>> {
        self.shared.as_ref()
    }

    /// The ids of the asks this replica holds.
    pub(crate) fn held(&self) -> Vec<String> {
        self.state().pending.keys().cloned().collect()
    }

    /// Whether this replica holds the ask `id`.
    pub(crate) fn holds(&self, id: &str) -> bool {
        self.state().pending.contains_key(id)
    }

    /// The same registry holding at most `per_sandbox` asks of one sandbox and `per_user` of one user at once.
    pub(crate) fn with_caps(self, per_sandbox: usize, per_user: usize) -> Approvals {
        Approvals {
            per_sandbox,
            per_user,
            ..self
        }
    }

    /// HeldRequest and wait. A standing grant covering the request answers at once ([`Resolution::Granted`]); otherwise the ask
    /// is registered under a fresh id, announced to the webhook (in the background), and waits for a decision or
    /// the timeout. Dropping the returned future withdraws the ask.
    pub(crate) async fn ask(&self, ask: HeldRequest) -> Resolution {
        let started = Instant::now();
        let (wake, mut woken) = oneshot::channel();
        let id = {
            let mut state = self.state();
            if let Some(grant) = state.grants.covering(&ask) {
                tracing::debug!(grant = %grant.id, sandbox = %ask.sandbox, "approval: a standing grant covers it");
                return Resolution::Granted {
                    grant: grant.id.clone(),
                };
            }
            // SECURITY: one sandbox, or one user's sandboxes, cannot hold every slot of the queue that every
            // other sandbox's asks need.
            if let Some(limited) = self.over_cap(&state, &ask, started) {
                return limited;
            }
            if state.pending.len() >= self.max_pending {
                tracing::warn!(sandbox = %ask.sandbox, max = self.max_pending, "approval: too many pending, refused");
                return Resolution::Full;
            }
            state.seq += 1;
            let seq = state.seq;
            let id = fresh_id("ap-", seq, |id| state.pending.contains_key(id));
            let now = SystemTime::now();
            let pending = Approval {
                id: id.clone(),
                ask,
                asked_at: crate::rfc3339::seconds(now),
                expires_at: crate::rfc3339::seconds(now.checked_add(self.timeout).unwrap_or(now)),
            };
            let announced = self.spawn_webhook({
                let pending = pending.clone();
                move |hook| async move { announce::requested(&hook, &pending).await }
            });
            tracing::debug!(id = %id, sandbox = %pending.ask.sandbox, "approval: asked");
            let entry = RegisteredAsk {
                seq,
                pending,
                wake,
                announced,
                deadline: started + self.timeout,
            };
            let shown = self.shared.is_some().then(|| entry.pending.clone());
            state.pending.insert(id.clone(), entry);
            (id, shown)
        };
        let (id, shown) = id;
        self.changed();
        let _withdraw = Withdraw {
            approvals: self,
            id: id.clone(),
        };
        if let (Some(shared), Some(pending)) = (&self.shared, shown) {
            shared.publish(&pending).await;
        }
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
            Some(decision) if decision.verdict == Ruling::Allow => Resolution::Allowed { id, decision, waited },
            Some(decision) => Resolution::Denied { id, decision, waited },
            None => {
                tracing::debug!(id = %id, "approval: timed out");
                Resolution::TimedOut { id, waited }
            }
        }
    }

    /// Every pending approval, oldest first.
    pub fn pending(&self) -> Vec<Approval> {
        let state = self.state();
        let mut entries: Vec<&RegisteredAsk> = state.pending.values().collect();
        entries.sort_by_key(|e| e.seq);
        entries.into_iter().map(|e| e.pending.clone()).collect()
    }

    /// Decide one pending approval and wake its request. `by` names who decided (1-128 characters, no control
    /// characters); an allow with scope `always` or `exact` also creates a [`Grant`]; a deny is `once` only.
    /// Returns the pending approval as it was.
    pub(crate) fn decide(&self, id: &str, verdict: Ruling, scope: Reach, by: &str) -> Result<Approval, DecideError> {
        check_decision(verdict, scope, by)?;
        let decision = HumanDecision {
            verdict,
            scope,
            by: by.to_string(),
            at: crate::rfc3339::seconds(SystemTime::now()),
        };
        let (pending, announced) = {
            let mut state = self.state();
            let not_found = || DecideError::NotFound(id.to_string());
            let entry = state.pending.remove(id).ok_or_else(not_found)?;
            // Fails only if the request went away just now (its withdrawal is waiting for the lock).
            entry.wake.send(decision.clone()).map_err(|_| not_found())?;
            if verdict == Ruling::Allow && scope != Reach::Once {
                let grant = state.grants.add(&entry.pending, &decision, scope);
                tracing::info!(grant = %grant, approval = %id, by = %by, "approval: standing grant created");
                if let Some(made) = state.grants.get(&grant) {
                    self.share_grant(made.clone());
                }
            }
            (entry.pending, entry.announced)
        };
        tracing::info!(id = %id, sandbox = %pending.ask.sandbox, ?verdict, ?scope, by = %by, "approval: decided");
        self.announce_decision(&pending, decision, announced);
        Ok(pending)
    }

    /// Every standing grant, oldest first.
    pub(crate) fn grants(&self) -> Vec<Grant> {
        self.state().grants.all()
    }

    /// Remove a grant; false if unknown.
    pub(crate) fn revoke_grant(&self, id: &str) -> bool {
        let mut state = self.state();
        let revoked = state.grants.remove(id);
        if revoked {
            tracing::info!(grant = %id, "approval: standing grant revoked");
        }
        revoked
    }

    /// A grant another replica made (`Some`) or removed (`None` for `id`), applied here.
    pub(crate) fn apply_shared_grant(&self, id: &str, grant: Option<Grant>) {
        let mut state = self.state();
        match grant {
            Some(g) => state.grants.put(g),
            None => {
                state.grants.remove(id);
            }
        }
    }

    /// Every grant, as the shared store holds them.
    pub(crate) fn apply_shared_grants(&self, all: Vec<Grant>) {
        self.state().grants.replace(all);
    }

    /// Store a grant made here for the other replicas, in the background.
    fn share_grant(&self, grant: Grant) {
        if let (Some(shared), Ok(runtime)) = (self.shared.clone(), tokio::runtime::Handle::try_current()) {
            runtime.spawn(async move {
                if let Err(e) = shared.publish_grant(&grant).await {
                    tracing::warn!(grant = %grant.id, "a grant holds on this replica only: {e}");
                }
            });
        }
    }

    /// Drop everything of a sandbox that is gone: its grants, and its pending asks, which end as denied by "cordon".
    pub(crate) fn forget_sandbox(&self, sandbox: &SandboxId) {
        self.sweep(|who, _, _| who.id != *sandbox);
    }

    /// Keep only the asks and grants for which `keep(sandbox incarnation, rule index, rule fingerprint)` holds:
    /// the others' grants are dropped and their asks end as denied by "cordon". Run when a sandbox is revoked,
    /// expires, or a reload changes its policy.
    pub(crate) fn sweep(&self, keep: impl Fn(&Sandbox, usize, &str) -> bool) {
        let decision = HumanDecision {
            verdict: Ruling::Deny,
            scope: Reach::Once,
            by: CORDON.to_string(),
            at: crate::rfc3339::seconds(SystemTime::now()),
        };
        let kept = |ask: &HeldRequest| keep(&ask.who, ask.rule, &ask.rule_fingerprint);
        let ended: Vec<(Approval, Option<JoinHandle<bool>>)> = {
            let mut state = self.state();
            let mut dropped = Vec::new();
            state.grants.retain(|g| {
                let held = keep(&g.who, g.rule, &g.rule_fingerprint);
                if !held {
                    tracing::info!(grant = %g.id, sandbox = %g.sandbox, "approval: grant dropped, its sandbox or rule is gone");
                    dropped.push(g.id.clone());
                }
                held
            });
            if let (Some(shared), Ok(runtime), false) = (
                self.shared.clone(),
                tokio::runtime::Handle::try_current(),
                dropped.is_empty(),
            ) {
                runtime.spawn(async move {
                    for id in dropped {
                        let _ = shared.remove_grant(&id).await;
                    }
                });
            }
            state
                .pending
                .extract_if(|_, e| !kept(&e.pending.ask))
                .filter_map(|(_, e)| e.wake.send(decision.clone()).ok().map(|()| (e.pending, e.announced)))
                .collect()
        };
        for (pending, announced) in ended {
            tracing::info!(id = %pending.id, sandbox = %pending.ask.sandbox, "approval: denied, its sandbox or rule is gone");
            self.announce_decision(&pending, decision.clone(), announced);
        }
    }

    /// The refusal for an ask over the sandbox's or the user's cap, if it is.
    fn over_cap(&self, state: &ApprovalState, ask: &HeldRequest, now: Instant) -> Option<Resolution> {
        let check = |over: Over, max: usize, same: &dyn Fn(&HeldRequest) -> bool| {
            let mine = state.pending.values().filter(|e| same(&e.pending.ask));
            let (count, first) = mine.fold((0usize, None::<Instant>), |(n, first), e| {
                (n + 1, Some(first.map_or(e.deadline, |f| f.min(e.deadline))))
            });
            (count >= max).then(|| {
                // A slot frees when the oldest of them times out, if nobody decides before.
                let retry_after = first
                    .unwrap_or(now)
                    .saturating_duration_since(now)
                    .max(Duration::from_secs(1));
                tracing::warn!(sandbox = %ask.sandbox, user = %ask.user, ?over, max, "approval: too many pending, refused");
                Resolution::Limited { over, max, retry_after }
            })
        };
        check(Over::Sandbox, self.per_sandbox, &|a| a.sandbox == ask.sandbox)
            .or_else(|| check(Over::User, self.per_user, &|a| a.user == ask.user))
    }

    /// Number pending (for a metrics gauge).
    pub fn pending_count(&self) -> usize {
        self.state().pending.len()
    }

    fn state(&self) -> MutexGuard<'_, ApprovalState> {
        self.state.lock().unpoisoned()
    }

    /// Announce a decision once the announcement of the ask itself is done, so that a receiver sees them in order.
    fn announce_decision(&self, pending: &Approval, decision: HumanDecision, announced: Option<JoinHandle<bool>>) {
        let pending = pending.clone();
        self.spawn_webhook(move |hook| async move {
            if let Some(announced) = announced {
                let _ = announced.await;
            }
            announce::decided(&hook, &pending, &decision).await
        });
    }

    /// Run `call` with the webhook in the background, if there is a webhook (and a runtime to run it on).
    fn spawn_webhook<F, Fut>(&self, call: F) -> Option<JoinHandle<bool>>
    where
        F: FnOnce(Arc<Webhook>) -> Fut,
        Fut: Future<Output = bool> + Send + 'static,
    {
        self.webhook.as_ref()?.spawn(call)
    }
}

/// Whether a decision may be taken as it is: who decides is named, and a deny is `once`.
pub(crate) fn check_decision(verdict: Ruling, scope: Reach, by: &str) -> Result<(), DecideError> {
    if by.trim().is_empty() || by.chars().count() > MAX_BY || by.chars().any(char::is_control) {
        return Err(DecideError::Invalid(format!(
            "by must name who decides in 1-{MAX_BY} characters without control characters"
        )));
    }
    if verdict == Ruling::Deny && scope != Reach::Once {
        return Err(DecideError::Invalid(
            "always and exact apply to allow only; add a policy rule to refuse for good".to_string(),
        ));
    }
    Ok(())
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
        // However the ask ended (decided, timed out, swept, withdrawn), the list changed.
        self.approvals.changed();
        // Shared asks leave the shared list however they ended.
        if let (Some(shared), Ok(runtime)) = (self.approvals.shared.clone(), tokio::runtime::Handle::try_current()) {
            let id = std::mem::take(&mut self.id);
            runtime.spawn(async move { shared.withdraw(&id).await });
        }
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
