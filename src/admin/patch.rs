//! `PATCH /v1/sandboxes/{id}`: another policy for a live run-time sandbox. What it no longer allows is closed, and
//! its CA is re-issued when the names it may sign for change.

use std::sync::Arc;

use http::StatusCode;
use serde_json::{Value, json};

use super::policy::asked;
use super::response::{AdminResponse, error, json_response};
use super::sandboxes::{blocking, check_id, failed, record_view, unknown_fields};
use crate::control::{self, ControlError};
use crate::names::SandboxId;
use crate::state::ProxyState;
use crate::tls::ca::scope_for;

/// `PATCH /v1/sandboxes/{id}`: another policy for a live run-time sandbox. Tunnels its new policy does not allow
/// are closed at once (requests are decided afresh anyway); the CA is re-issued when the names it may sign
/// change, and the answer says so and carries the CA in force.
pub(super) async fn patch(state: &Arc<ProxyState>, id: &SandboxId, body: Value) -> AdminResponse {
    let sandbox_id = match check_id(state, id).and_then(|sandbox| unknown_fields(&body, &["policy"]).map(|()| sandbox))
    {
        Ok(sandbox) => sandbox,
        Err(e) => return failed(e),
    };
    let generation = state.current();
    let now = control::now();
    let Some(before) = state
        .control
        .get(&sandbox_id)
        .filter(|r| r.revoked.is_none() && r.expires > now)
    else {
        return failed(ControlError::NotFound(id.to_string()));
    };
    let asked = match asked(&generation, id.as_str(), &body) {
        Ok(a) => a,
        Err(resp) => return resp,
    };
    let sandbox = before.incarnation();
    // The names the CA in force may sign for, against those the new policy needs.
    let old_scope = state.ca(&generation, &sandbox).ok().map(|ca| ca.scope().clone());
    let new_scope = scope_for(&asked.policy).normalized().ok();
    let of = asked.of.clone();
    let id2 = sandbox_id.clone();
    let updated = blocking(state, move |s| s.control.set_policy(&id2, &of, control::now())).await;
    let record = match updated {
        Ok(r) => r,
        Err(e) => return failed(e),
    };
    tracing::info!(sandbox = %id, policy = %record.policy, own = record.inline_policy.is_some(), "sandbox policy changed");
    // SECURITY: what the new policy does not allow is closed now, not when the client next asks.
    state.sweep(true);
    let reissue = old_scope.is_none() || old_scope != new_scope;
    let ca = if reissue {
        let (s, id3, policy) = (state.clone(), sandbox_id.clone(), asked.policy.clone());
        let rotated = tokio::task::spawn_blocking(move || {
            tokio::runtime::Handle::current().block_on(s.cas.rotate(&id3, Some(&policy)))
        })
        .await;
        match rotated {
            Ok(Ok(ca)) => {
                state.leaves.invalidate_sandbox(&sandbox_id);
                ca.cert_pem().to_string()
            }
            Ok(Err(e)) => return ca_failed(id, &e.to_string()),
            Err(e) => return ca_failed(id, &e.to_string()),
        }
    } else {
        match state.ca(&state.current(), &record.incarnation()) {
            Ok(ca) => ca.cert_pem().to_string(),
            Err(e) => return ca_failed(id, &e.to_string()),
        }
    };
    let mut view = record_view(state, &record);
    view["ca_reissued"] = json!(reissue);
    view["ca_certificate"] = json!(ca);
    view["warnings"] = json!(asked.warnings);
    json_response(StatusCode::OK, &view)
}

/// The policy is changed and in force, but the CA could not be re-issued: say both.
fn ca_failed(id: &SandboxId, e: &str) -> AdminResponse {
    tracing::error!(sandbox = %id, "the policy changed but the CA could not be re-issued: {e}");
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "ca_unavailable",
        format!(
            "the new policy is in force, but the sandbox's CA could not be re-issued for it ({e}); \
             POST /v1/sandboxes/{id}/rotate-ca to try again"
        ),
    )
}
