//! `/v1/approvals` and `/v1/grants`: the requests held for a human, their decisions, and standing grants.

use http::StatusCode;
use serde_json::{Value, json};

use super::access::Caller;
use super::acted::{self, Acted, CoveredRequest};
use super::response::{AdminResponse, error, json_response};
use crate::approval::{DecideError, Reach, Ruling, Written, check_decision};
use crate::audit::ApprovalRecord;
use crate::state::ProxyState;

/// `GET /v1/approvals`: what is waiting, oldest first (on every replica sharing a PostgreSQL store).
pub(super) async fn list(state: &ProxyState) -> AdminResponse {
    match pending(state).await {
        Ok(all) => json_response(StatusCode::OK, &json!({ "pending": all })),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, "store_unavailable", e),
    }
}

/// What is waiting, oldest first, as the API shows it (from the shared store when there is one).
pub(super) async fn pending(state: &ProxyState) -> Result<Vec<Value>, String> {
    match state.approvals.shared() {
        None => Ok(state
            .approvals
            .pending()
            .iter()
            .map(|p| serde_json::to_value(p).unwrap_or_default())
            .collect()),
        Some(shared) => shared.list().await.map_err(|e| e.to_string()),
    }
}

fn field<'a>(body: &'a Value, name: &str) -> Option<&'a str> {
    body.get(name).and_then(Value::as_str)
}

/// `POST /v1/approvals/{id}` with `{"decision": "allow"|"deny", "scope": "once"|"always"|"exact"}`: decided by the
/// caller, whose principal's name the decision carries.
pub(super) async fn decide(state: &ProxyState, caller: &Caller, id: &str, body: &Value) -> AdminResponse {
    // SECURITY: who decided is the authenticated principal, never a field of the body: a `by` is refused.
    if body.get("by").is_some() {
        return invalid(format!(
            "by: who decides is the caller that authenticated ({:?} here), not a field of the body; remove it",
            caller.principal.name
        ));
    }
    if let Some(k) = body
        .as_object()
        .and_then(|o| o.keys().find(|k| !["decision", "scope"].contains(&k.as_str())))
    {
        return invalid(format!("unknown field {k:?}; the fields are decision, scope"));
    }
    let verdict = match field(body, "decision") {
        Some("allow") => Ruling::Allow,
        Some("deny") => Ruling::Deny,
        _ => return invalid("decision: write \"allow\" or \"deny\"".into()),
    };
    let scope = match body.get("scope") {
        None | Some(Value::Null) => Reach::Once,
        Some(v) => match v.as_str() {
            Some("once") => Reach::Once,
            Some("always") => Reach::Always,
            Some("exact") => Reach::Exact,
            _ => {
                return invalid(
                    "scope: write \"once\" (the default), \"always\" (same method and path) or \"exact\" (same \
                     method, URL with query, and body)"
                        .into(),
                );
            }
        },
    };
    let by = caller.principal.name.as_str();
    if let Err(e) = check_decision(verdict, scope, by) {
        return failed(id, e);
    }
    // Held by another replica sharing the store: the decision is written there and that replica applies it.
    let pending = if let Some(shared) = state.approvals.shared()
        && !state.approvals.holds(id)
    {
        let written = Written {
            verdict,
            scope,
            by: by.to_owned(),
        };
        match shared.decide(id, &written).await {
            Ok(Some(pending)) => {
                tracing::info!(approval = %id, by, ?verdict, ?scope, "approval decided for another replica");
                pending
            }
            Ok(None) => return failed(id, DecideError::NotFound(id.to_owned())),
            Err(e) => return error(StatusCode::SERVICE_UNAVAILABLE, "store_unavailable", e.to_string()),
        }
    } else {
        match state.approvals.decide(id, verdict, scope, by) {
            Ok(pending) => {
                tracing::info!(approval = %pending.id, sandbox = %pending.ask.sandbox, by, ?verdict, ?scope, "approval decided");
                serde_json::to_value(&pending).unwrap_or_default()
            }
            Err(e) => return failed(id, e),
        }
    };
    let resp = json_response(
        StatusCode::OK,
        &json!({"approval": pending, "decision": {"verdict": verdict, "scope": scope, "by": by}}),
    );
    let text = |key: &str| pending.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    let covered = CoveredRequest {
        method: text("method"),
        host: text("host"),
        port: pending
            .get("port")
            .and_then(Value::as_u64)
            .and_then(|p| u16::try_from(p).ok())
            .unwrap_or_default(),
        path: text("path"),
        policy: text("policy"),
        user: text("user"),
        approval: ApprovalRecord {
            id: id.to_owned(),
            outcome: verdict.as_str().to_owned(),
            by: Some(by.to_owned()),
            scope: Some(scope.as_str().to_owned()),
            waited_ms: 0,
        },
    };
    let rule = pending.get("rule").and_then(Value::as_u64).unwrap_or_default();
    acted::with(
        resp,
        Acted {
            sandbox: Some(text("sandbox")),
            detail: Some(format!("rule {rule} of policy {}", covered.policy)),
            covered: Some(covered),
        },
    )
}

fn failed(id: &str, e: DecideError) -> AdminResponse {
    match e {
        DecideError::NotFound(_) => error(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no pending approval {id:?} (decided already, timed out, or never asked)"),
        ),
        DecideError::Invalid(m) => invalid(m),
    }
}

/// `GET /v1/grants`: standing grants made by `always` decisions.
pub(super) fn grants(state: &ProxyState) -> AdminResponse {
    json_response(StatusCode::OK, &json!({ "grants": state.approvals.grants() }))
}

/// `DELETE /v1/grants/{id}` (on every replica sharing a PostgreSQL store).
pub(super) async fn revoke_grant(state: &ProxyState, id: &str) -> AdminResponse {
    let here = state.approvals.revoke_grant(id);
    let stored = match state.approvals.shared() {
        None => false,
        Some(shared) => match shared.remove_grant(id).await {
            Ok(stored) => stored,
            Err(e) => return error(StatusCode::SERVICE_UNAVAILABLE, "store_unavailable", e.to_string()),
        },
    };
    if here || stored {
        tracing::info!(grant = %id, "grant removed");
        json_response(StatusCode::OK, &json!({"removed": id}))
    } else {
        error(StatusCode::NOT_FOUND, "not_found", format!("no grant {id:?}"))
    }
}

fn invalid(message: String) -> AdminResponse {
    error(StatusCode::UNPROCESSABLE_ENTITY, "invalid", message)
}
