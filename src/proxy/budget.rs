//! Credential usage budgets on the request path: each credential applied to a request takes its place in its
//! budget before the request is sent (the bytes are added when the exchange ends, by the state's record
//! observer). A spent budget refuses the request with 429 `credential_budget` and `Retry-After`; the first
//! refusal of a window is counted and announced through the webhook.

use std::sync::Arc;

use crate::error::ProxyError;
use crate::generation::Generation;
use crate::identity::Sandbox;
use crate::names::CredentialName;
use crate::state::ProxyState;

/// Take one request of each credential in `applied` for `sandbox`, or refuse.
pub(super) fn take(
    state: &Arc<ProxyState>,
    generation: &Generation,
    sandbox: &Sandbox,
    applied: &[CredentialName],
) -> Result<(), ProxyError> {
    let budgets = &generation.config.credential_budgets;
    for name in applied {
        let Some(b) = budgets.of(&sandbox.policy, name) else {
            continue;
        };
        // A budget per sandbox is one incarnation's: spent by an earlier sandbox of the id, it is not the next
        // one's (per user, it is the user's, whatever sandboxes they have).
        let incarnation = sandbox.incarnation();
        let subject = if b.per_user {
            sandbox.user.as_str()
        } else {
            incarnation.as_str()
        };
        // SECURITY: a spent budget refuses the request before it is sent: the credential it would carry goes
        // nowhere, however many requests the sandbox sends at once (taking a place is one locked count).
        if let Err(spent) = state.credential_budgets.take(name, subject, &b.budget) {
            if spent.first {
                state.metrics.credential_budget_spent(name.as_str());
                tracing::warn!(sandbox = %sandbox.id, credential = %name, "credential budget spent: {}", spent.refusal.message);
                let body = serde_json::json!({
                    "event": "credential.budget_spent",
                    "sandbox": sandbox.id.as_str(),
                    "user": sandbox.user,
                    "policy": sandbox.policy,
                    "credential": name,
                    "per": if b.per_user { "user" } else { "sandbox" },
                    "requests": b.budget.requests,
                    "bytes": b.budget.bytes,
                    "window_seconds": b.budget.window.as_secs(),
                    "retry_after_seconds": spent.refusal.retry_after.as_secs(),
                });
                if let Some(hook) = &state.webhook {
                    hook.send("credential.budget_spent", sandbox.id.as_str(), body);
                }
            }
            return Err(ProxyError::Limited(spent.refusal));
        }
    }
    Ok(())
}
