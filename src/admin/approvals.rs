//! `/v1/approvals` and `/v1/grants`: the requests held for a human, their decisions, and standing grants.

use http::StatusCode;
use serde_json::{Value, json};

use super::response::{AdminResponse, error, json_response};
use crate::approval::{DecideError, Ruling, Scope, Written, check_decision};
use crate::state::ProxyState;

/// `GET /v1/approvals`: what is waiting, oldest first (on every replica sharing a PostgreSQL store).
pub(super) async fn list(state: &ProxyState) -> AdminResponse {
    let Some(shared) = state.approvals.shared() else {
        return json_response(StatusCode::OK, &json!({ "pending": state.approvals.pending() }));
    };
    match shared.list().await {
        Ok(all) => json_response(StatusCode::OK, &json!({ "pending": all })),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, "store_unavailable", e.to_string()),
    }
}

fn field<'a>(body: &'a Value, name: &str) -> Option<&'a str> {
    body.get(name).and_then(Value::as_str)
}

/// `POST /v1/approvals/{id}` with `{"decision": "allow"|"deny", "scope": "once"|"always", "by": "..."}`.
pub(super) async fn decide(state: &ProxyState, id: &str, body: &Value) -> AdminResponse {
    if let Some(k) = body
        .as_object()
        .and_then(|o| o.keys().find(|k| !["decision", "scope", "by"].contains(&k.as_str())))
    {
        return invalid(format!("unknown field {k:?}; the fields are decision, scope, by"));
    }
    let verdict = match field(body, "decision") {
        Some("allow") => Ruling::Allow,
        Some("deny") => Ruling::Deny,
        _ => return invalid("decision: write \"allow\" or \"deny\"".into()),
    };
    let scope = match body.get("scope") {
        None | Some(Value::Null) => Scope::Once,
        Some(v) => match v.as_str() {
            Some("once") => Scope::Once,
            Some("always") => Scope::Always,
            Some("exact") => Scope::Exact,
            _ => {
                return invalid(
                    "scope: write \"once\" (the default), \"always\" (same method and path) or \"exact\" (same \
                     method, URL with query, and body)"
                        .into(),
                );
            }
        },
    };
    let Some(by) = field(body, "by") else {
        return invalid("by: say who decides (a name, for the audit record)".into());
    };
    if let Err(e) = check_decision(verdict, scope, by) {
        return failed(id, e);
    }
    // Held by another replica sharing the store: the decision is written there and that replica applies it.
    if let Some(shared) = state.approvals.shared()
        && !state.approvals.holds(id)
    {
        let written = Written {
            verdict,
            scope,
            by: by.to_owned(),
        };
        return match shared.decide(id, &written).await {
            Ok(Some(pending)) => {
                tracing::info!(approval = %id, by, ?verdict, ?scope, "approval decided for another replica");
                json_response(
                    StatusCode::OK,
                    &json!({"approval": pending, "decision": {"verdict": verdict, "scope": scope, "by": by}}),
                )
            }
            Ok(None) => failed(id, DecideError::NotFound(id.to_owned())),
            Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, "store_unavailable", e.to_string()),
        };
    }
    match state.approvals.decide(id, verdict, scope, by) {
        Ok(pending) => {
            tracing::info!(approval = %pending.id, sandbox = %pending.ask.sandbox, by, ?verdict, ?scope, "approval decided");
            json_response(
                StatusCode::OK,
                &json!({"approval": pending, "decision": {"verdict": verdict, "scope": scope, "by": by}}),
            )
        }
        Err(e) => failed(id, e),
    }
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
