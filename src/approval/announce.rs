//! What the webhook is told of approvals: each new pending approval (`approval.requested`) and each decision
//! (`approval.decided`), with the approval as the admin API shows it.

use crate::webhook::Webhook;

use super::types::{Approval, HumanDecision};

/// The event of a new pending approval.
pub(crate) const EVENT_REQUESTED: &str = "approval.requested";
/// The event of a decision.
pub(crate) const EVENT_DECIDED: &str = "approval.decided";

/// POST `{"event": "approval.requested", "approval": <pending>}` ([`Webhook::event`]); whether it was delivered.
pub(crate) async fn requested(hook: &Webhook, pending: &Approval) -> bool {
    let body = serde_json::json!({ "event": EVENT_REQUESTED, "approval": pending });
    hook.event(EVENT_REQUESTED, &pending.id, &body).await
}

/// POST `{"event": "approval.decided", "approval": <pending>, "decision": <decision>}`, as [`requested`].
pub(crate) async fn decided(hook: &Webhook, pending: &Approval, decision: &HumanDecision) -> bool {
    let body = serde_json::json!({ "event": EVENT_DECIDED, "approval": pending, "decision": decision });
    hook.event(EVENT_DECIDED, &pending.id, &body).await
}

#[cfg(test)]
#[path = "announce_tests.rs"]
mod tests;
