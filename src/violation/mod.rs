//! `on_violation`: a sandbox that keeps being refused for what looks like probing for secrets is treated as
//! compromised. Every record passes through [`Watch`] on its way to the audit; a refusal is classed (a metadata
//! or private destination by the address guard, whatever the reason it was refused with; an exfiltration or a
//! policy refusal by its reason), counted per (sandbox, kind) within the policy's window, and at the threshold
//! the policy's action is taken once: the sandbox revoked (as through the admin API; a declared one is refused
//! until cordon restarts or the admin API lifts it), or held (every further request needs a person's approval).
//! The action is audited, counted, and announced through the webhook with the records that triggered
//! it. The same observer adds each finished exchange's bytes to the budgets of the credentials applied to it.
//!
//! The watch observes: it reads the generation in force and counts, and hands a [`Trigger`] to the state,
//! which alone can revoke, hold and close; the state then has [`announce`] tell of what it did.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use arc_swap::ArcSwap;
use tokio::sync::mpsc::UnboundedSender;

use crate::audit::{Record, Sink, Verdict};
use crate::config::violations::{ViolationAction, ViolationKind};
use crate::generation::Generation;
use crate::limits::CredentialBudgetCounts;
use crate::locks::Unpoisoned;
use crate::metrics::Metrics;
use crate::names::SandboxId;
use crate::reason::Reason;
use crate::webhook::Webhook;

/// At most this many triggering records are kept per (sandbox, kind) to be announced.
const SHOWN: usize = 20;
/// Past this many (sandbox, kind) counts, those with nothing recent are forgotten.
const PRUNE_AT: usize = 4096;

/// The refusals of one sandbox of one kind within the window.
#[derive(Default)]
struct RefusalWindow {
    at: VecDeque<Instant>,
    records: VecDeque<serde_json::Value>,
}

/// The watcher: a sink in front of the audit's, and the sandboxes it acted on.
pub(crate) struct Watch {
    inner: Arc<dyn Sink>,
    /// The generation in force (the state's own).
    live: Arc<ArcSwap<Generation>>,
    /// What each (sandbox or user, credential) used of its budget (the state's own).
    budgets: Arc<CredentialBudgetCounts>,
    /// Where thresholds reached go, for the state to act on.
    triggers: UnboundedSender<Trigger>,
    seen: Mutex<HashMap<(SandboxId, ViolationKind), RefusalWindow>>,
    /// Declared sandboxes revoked for violations: refused until restart or lifted.
    suspended: RwLock<HashSet<SandboxId>>,
    /// Sandboxes held for violations: every request needs approval.
    held: RwLock<HashSet<SandboxId>>,
}

impl Watch {
    /// Watch the records on their way to `inner`, under the generation in `live`; count credentials' bytes in
    /// `budgets`; send what reaches a threshold to `triggers`.
    pub(crate) fn new(
        inner: Arc<dyn Sink>,
        live: Arc<ArcSwap<Generation>>,
        budgets: Arc<CredentialBudgetCounts>,
        triggers: UnboundedSender<Trigger>,
    ) -> Watch {
        Watch {
            inner,
            live,
            budgets,
            triggers,
            seen: Mutex::default(),
            suspended: RwLock::default(),
            held: RwLock::default(),
        }
    }

    /// Whether `sandbox` was revoked for violations while declared (its requests are refused as revoked).
    pub(crate) fn suspended(&self, sandbox: &SandboxId) -> bool {
        let set = self.suspended.read().unpoisoned();
        !set.is_empty() && set.contains(sandbox)
    }

    /// Whether `sandbox` is held: every request needs approval.
    pub(crate) fn held(&self, sandbox: &SandboxId) -> bool {
        let set = self.held.read().unpoisoned();
        !set.is_empty() && set.contains(sandbox)
    }

    /// Lift a suspension or a hold (the admin API); whether there was one.
    pub(crate) fn lift(&self, sandbox: &SandboxId) -> bool {
        let a = self.suspended.write().unpoisoned().remove(sandbox);
        let b = self.held.write().unpoisoned().remove(sandbox);
        a || b
    }

    /// Count `record` if it is a refusal of a watched kind; act if it reaches its threshold.
    fn observe(&self, record: &Record) {
        let (Verdict::Deny, Some(sandbox), Some(policy), Some(reason)) =
            (record.decision(), record.sandbox(), record.policy(), record.reason())
        else {
            return;
        };
        // The record holds the id as text; it was written from an id, so this parse only fails for a record
        // that names no sandbox.
        let Ok(sandbox) = SandboxId::parse(sandbox) else {
            return;
        };
        let sandbox = &sandbox;
        let generation = self.live.load();
        // A sandbox's own (inline) policy is held to its base's on_violation.
        let base = policy.split('+').next().unwrap_or(policy);
        let Some(rules) = generation.config.on_violation.get(base) else {
            return;
        };
        let Some(kind) = classify(&generation, record.host(), record.port(), reason) else {
            return;
        };
        let Some(threshold) = rules.threshold(kind) else { return };
        let now = Instant::now();
        let triggered = {
            let mut seen = self.seen.lock().unpoisoned();
            // Sandboxes come and go: once the map is large, forget those with nothing in the last window.
            if seen.len() >= PRUNE_AT {
                seen.retain(|_, s| s.at.back().is_some_and(|t| now.duration_since(*t) <= rules.window));
            }
            let entry = seen.entry((sandbox.clone(), kind)).or_default();
            while entry.at.front().is_some_and(|t| now.duration_since(*t) > rules.window) {
                entry.at.pop_front();
            }
            entry.at.push_back(now);
            if entry.records.len() == SHOWN {
                entry.records.pop_front();
            }
            entry
                .records
                .push_back(serde_json::to_value(record).unwrap_or_default());
            if entry.at.len() < threshold as usize {
                None
            } else {
                // Counted afresh after an action, so it is taken once per threshold reached.
                seen.remove(&(sandbox.clone(), kind))
                    .map(|s| (s.at.len() as u64, s.records))
            }
        };
        let Some((count, records)) = triggered else { return };
        let already = match rules.action {
            ViolationAction::Hold => self.held(sandbox),
            ViolationAction::Revoke => self.suspended(sandbox),
        };
        if already {
            return;
        }
        let trigger = Trigger {
            sandbox: sandbox.clone(),
            user: record.user().map(str::to_owned),
            policy: policy.to_owned(),
            kind,
            count,
            window: rules.window,
            action: rules.action,
            records: records.into(),
        };
        if self.triggers.send(trigger).is_err() {
            tracing::error!(sandbox = %sandbox, "on_violation: nothing left to act on the threshold reached");
        }
    }

    /// Add the bytes of a finished exchange to the budgets of the credentials applied to it (a sandbox's kept
    /// for its incarnation, as `proxy::budget` takes them).
    fn count_bytes(&self, record: &Record) {
        let (Some(names), Some(sandbox), Some(policy)) = (record.credentials(), record.incarnation(), record.policy())
        else {
            return;
        };
        let generation = self.live.load();
        for name in names {
            if let Some(b) = generation.config.credential_budgets.of(policy, name) {
                let subject = if b.per_user {
                    record.user().unwrap_or_default()
                } else {
                    sandbox
                };
                let bytes = record.bytes_up().saturating_add(record.bytes_down());
                self.budgets.add_bytes(name, subject, &b.budget, bytes);
            }
        }
    }

    /// Mark `sandbox` suspended or held (the action taken).
    pub(crate) fn mark(&self, sandbox: &SandboxId, action: ViolationAction) {
        let set = match action {
            ViolationAction::Revoke => &self.suspended,
            ViolationAction::Hold => &self.held,
        };
        set.write().unpoisoned().insert(sandbox.clone());
    }
}

/// What reached a threshold.
pub(crate) struct Trigger {
    pub(crate) sandbox: SandboxId,
    pub(crate) user: Option<String>,
    pub(crate) policy: String,
    pub(crate) kind: ViolationKind,
    pub(crate) count: u64,
    pub(crate) window: std::time::Duration,
    pub(crate) action: ViolationAction,
    pub(crate) records: Vec<serde_json::Value>,
}

impl Sink for Watch {
    fn write(&self, record: &Record) {
        self.inner.write(record);
        self.observe(record);
        self.count_bytes(record);
    }

    fn health(&self) -> Option<&crate::audit::Health> {
        self.inner.health()
    }
}

/// Tell of the action the state took on `t` (`runtime`: the sandbox was created at run time and revoked in the
/// store): the log, the audit record (through `audit`), the metrics, and the webhook's
/// `sandbox.violation` event with the records that triggered it.
pub(crate) fn announce(
    t: Trigger,
    runtime: bool,
    audit: &Arc<dyn Sink>,
    metrics: &Metrics,
    webhook: Option<&Arc<Webhook>>,
) {
    let detail = format!(
        "{} {} refusal(s) within {}: {}",
        t.count,
        t.kind.as_str(),
        humantime::format_duration(t.window),
        match t.action {
            ViolationAction::Revoke if runtime => "revoked",
            ViolationAction::Revoke => "suspended (a declared sandbox: refused until cordon restarts or it is lifted)",
            ViolationAction::Hold => "held (every request needs approval)",
        }
    );
    tracing::warn!(sandbox = %t.sandbox, kind = t.kind.as_str(), action = t.action.as_str(), "on_violation: {detail}");
    crate::audit::violation(
        audit,
        crate::audit::Violation {
            sandbox: &t.sandbox,
            user: t.user.as_deref(),
            policy: &t.policy,
            reason: t.action.reason(),
            count: t.count,
            detail,
        },
    );
    metrics.violation(t.kind.as_str(), t.action.as_str());
    let body = serde_json::json!({
        "event": "sandbox.violation",
        "sandbox": t.sandbox,
        "user": t.user,
        "policy": t.policy,
        "kind": t.kind.as_str(),
        "count": t.count,
        "window_seconds": t.window.as_secs(),
        "action": t.action.as_str(),
        "records": t.records,
    });
    if let Some(hook) = webhook {
        hook.send("sandbox.violation", t.sandbox.as_str(), body);
    }
}

/// The kind a refusal counts as: a metadata or private destination by what the address guard says of it (so a
/// metadata address refused for having no rule still counts as metadata), else by the reason.
fn classify(generation: &Generation, host: Option<&str>, port: Option<u16>, reason: &str) -> Option<ViolationKind> {
    let by_reason = ViolationKind::of(reason);
    if by_reason == Some(ViolationKind::Exfiltration) {
        return by_reason;
    }
    if let Some(host) = host {
        let guard = generation.dialer.guard();
        let refused = match host.trim_matches(['[', ']']).parse::<IpAddr>() {
            Ok(ip) => guard.check_addr(SocketAddr::new(ip, port.unwrap_or(0))).err(),
            Err(_) => guard.check_name(host).err(),
        };
        match refused.as_ref().map(crate::net::GuardRefusal::reason) {
            Some(Reason::MetadataName | Reason::MetadataAddress) => return Some(ViolationKind::Metadata),
            Some(Reason::SpecialRange | Reason::SelfAddress) => return Some(ViolationKind::Private),
            _ => {}
        }
    }
    by_reason
}
