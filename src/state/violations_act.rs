//! Taking an `on_violation` action: revoke (or suspend a declared sandbox) or hold, then audit it, count it and
//! announce it with the records that triggered it.

use std::sync::Arc;

use crate::config::violations::ViolationAction;

use super::ProxyState;
use super::violations::Trigger;

/// Act on `t`.
pub(super) async fn act(state: Arc<ProxyState>, t: Trigger) {
    let runtime = state.control.get(&t.sandbox).is_some_and(|r| r.revoked.is_none());
    match t.action {
        ViolationAction::Revoke if runtime => {
            let (s, id) = (state.clone(), t.sandbox.clone());
            let revoked = tokio::task::spawn_blocking(move || s.control.revoke(&id, crate::control::now())).await;
            if !matches!(revoked, Ok(Ok(_))) {
                // The store cannot be written: the sandbox is refused here all the same.
                tracing::error!(sandbox = %t.sandbox, "on_violation: the store did not take the revocation; refused in memory");
                state.violations.mark(&t.sandbox, ViolationAction::Revoke);
            }
        }
        ViolationAction::Revoke => state.violations.mark(&t.sandbox, ViolationAction::Revoke),
        ViolationAction::Hold => state.violations.mark(&t.sandbox, ViolationAction::Hold),
    }
    // Its held requests are denied and its standing grants dropped; a revoked sandbox's connections close.
    state.approvals.forget_sandbox(&t.sandbox);
    state.sweep(false);
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
        &state.audit,
        crate::audit::Violation {
            sandbox: &t.sandbox,
            user: t.user.as_deref(),
            policy: &t.policy,
            reason: t.action.reason(),
            count: t.count,
            detail,
        },
    );
    state.metrics.violation(t.kind.as_str(), t.action.as_str());
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
    let sandbox = t.sandbox.clone();
    let _ = state
        .approvals
        .spawn_webhook(move |hook| async move { hook.event("sandbox.violation", &sandbox, &body).await });
}
