//! `/v1/access`: the access requests sandboxes filed from inside (at `access.cordon.internal`), each with what it
//! would add; a person with the approver role grants or denies one, or ends a grant early.

use http::StatusCode;
use serde_json::{Value, json};

use super::access::Caller;
use super::acted::{self, Acted};
use super::response::{AdminResponse, error, json_response};
use crate::control::access::{AccessState, NotDecided};
use crate::generation::NotGrantable;
use crate::state::ProxyState;

/// `GET /v1/access`: every request this replica keeps, oldest first (ended ones for a day).
pub(super) fn list(state: &ProxyState) -> AdminResponse {
    json_response(
        StatusCode::OK,
        &json!({ "requests": state.control.access.list(crate::control::now()) }),
    )
}

/// `POST /v1/access/{id}` with `{"decision": "grant"|"deny"}`: decided by the caller, whose principal's name the
/// decision carries. A grant is judged again first: against the boundary as the configuration says now, and
/// with what the sandbox was granted since.
pub(super) fn decide(state: &ProxyState, caller: &Caller, id: &str, body: &Value) -> AdminResponse {
    // SECURITY: who decided is the authenticated principal, never a field of the body.
    if let Some(k) = body
        .as_object()
        .and_then(|o| o.keys().find(|k| k.as_str() != "decision"))
    {
        return invalid(format!("unknown field {k:?}; the one field is decision"));
    }
    let grant = match body.get("decision").and_then(Value::as_str) {
        Some("grant") => true,
        Some("deny") => false,
        _ => return invalid("decision: write \"grant\" or \"deny\"".into()),
    };
    let now = crate::control::now();
    let Some(asked) = state.control.access.get(id, now) else {
        return unknown(id);
    };
    if grant && asked.state == AccessState::Pending {
        match state.current().judge_access(&asked.who, &state.control, &asked.allow) {
            Ok(_) | Err(NotGrantable::NothingNew) => {}
            Err(NotGrantable::PastBoundary(policy, past)) => {
                return error(
                    StatusCode::CONFLICT,
                    "past_boundary",
                    format!(
                        "the request now goes past the boundary of policy {policy:?} ({}); deny it",
                        past.first()
                            .map(|a| format!("{}: {}", a.path, a.message))
                            .unwrap_or_default()
                    ),
                );
            }
            Err(NotGrantable::NotOffered(policy)) => {
                return error(
                    StatusCode::CONFLICT,
                    "not_offered",
                    format!("policy {policy:?} no longer offers asking for access (no access: or boundary:); deny it"),
                );
            }
            Err(NotGrantable::Invalid(e)) => {
                return error(
                    StatusCode::CONFLICT,
                    "invalid",
                    format!("the request no longer reads: {}", e.join("; ")),
                );
            }
        }
    }
    let by = caller.principal.name.as_str();
    match state.control.access.decide(id, grant, by, now) {
        Ok(r) => {
            tracing::info!(id = %r.id, sandbox = %r.sandbox, by, state = r.state.as_str(), "access request decided");
            let detail = format!(
                "access request {} {} (policy {}, {} addition(s))",
                r.id,
                r.state.as_str(),
                r.policy,
                r.adds.len()
            );
            let sandbox = r.sandbox.clone();
            acted::with(
                json_response(StatusCode::OK, &json!({ "request": r })),
                Acted {
                    sandbox: Some(sandbox),
                    detail: Some(detail),
                    covered: None,
                },
            )
        }
        Err(e) => not_decided(id, &e),
    }
}

/// `DELETE /v1/access/{id}`: end a grant before its lifetime; the sandbox's tunnels are decided again at once.
pub(super) fn revoke(state: &ProxyState, caller: &Caller, id: &str) -> AdminResponse {
    let by = caller.principal.name.as_str();
    match state.control.access.revoke(id, by, crate::control::now()) {
        Ok(r) => {
            state.sweep(true);
            tracing::info!(id = %r.id, sandbox = %r.sandbox, by, "access grant revoked");
            let (sandbox, detail) = (r.sandbox.clone(), format!("access grant {} revoked", r.id));
            acted::with(
                json_response(StatusCode::OK, &json!({ "request": r })),
                Acted {
                    sandbox: Some(sandbox),
                    detail: Some(detail),
                    covered: None,
                },
            )
        }
        Err(e) => not_decided(id, &e),
    }
}

fn not_decided(id: &str, e: &NotDecided) -> AdminResponse {
    match e {
        NotDecided::Unknown => unknown(id),
        NotDecided::State(s) => error(
            StatusCode::CONFLICT,
            "not_pending",
            format!(
                "access request {id:?} is {}, not {}",
                s.as_str(),
                "what this call needs (pending to decide, granted to revoke)"
            ),
        ),
    }
}

fn unknown(id: &str) -> AdminResponse {
    error(
        StatusCode::NOT_FOUND,
        "not_found",
        format!("no access request {id:?} (never filed, or ended more than a day ago)"),
    )
}

fn invalid(message: String) -> AdminResponse {
    error(StatusCode::UNPROCESSABLE_ENTITY, "invalid", message)
}
