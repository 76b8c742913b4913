//! `/v1/sandboxes/{id}/previews`: short-lived signed links to a port of a sandbox, for one person, and their
//! revocation. A link is made only for what the preview listener would open: a live sandbox with an address of
//! its own, at a port its policy exposes.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use super::response::{AdminResponse, error, json_response};
use crate::names::SandboxId;
use crate::preview::{Claims, Previews, host};
use crate::proxy::{preview_address, preview_allowed, preview_live};
use crate::state::ProxyState;

/// The body of `POST /v1/sandboxes/{id}/previews`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewPreview {
    /// The sandbox's port.
    port: i64,
    /// The person the link is for (audit records name them).
    user: String,
    /// How long the link may be opened, e.g. `5m` (default and most: `previews.link_ttl`).
    ttl: Option<String>,
}

/// Make a link to `port` of the sandbox the path segment `segment` names, for `user` (the segment is read after
/// the body, and must name the id as a DNS label).
pub(super) fn create(state: &ProxyState, segment: &str, body: Value) -> AdminResponse {
    let Some(previews) = state.previews.clone() else {
        return error(
            StatusCode::NOT_FOUND,
            "previews_off",
            "previews are off: set listen.preview and previews.domain",
        );
    };
    let ask: NewPreview = match serde_json::from_value(body) {
        Ok(a) => a,
        Err(e) => return error(StatusCode::UNPROCESSABLE_ENTITY, "invalid", format!("the body: {e}")),
    };
    let port = match u16::try_from(ask.port) {
        Ok(p) if p > 0 => p,
        _ => return invalid("port", format!("{} is not a port (1 to 65535)", ask.port)),
    };
    let user = ask.user.as_str();
    if user.is_empty() || user.chars().count() > 128 || user.chars().any(char::is_control) {
        return invalid(
            "user",
            "must be 1 to 128 characters, none of them control characters".into(),
        );
    }
    let ttl = match ask.ttl.as_deref().map(humantime::parse_duration) {
        None => previews.config.link_ttl,
        Some(Ok(d)) if !d.is_zero() && d <= previews.config.link_ttl => d,
        Some(Ok(_)) => {
            return invalid(
                "ttl",
                format!(
                    "must be more than 0 and at most previews.link_ttl ({})",
                    humantime::format_duration(previews.config.link_ttl)
                ),
            );
        }
        Some(Err(e)) => return invalid("ttl", format!("{e}; write e.g. 5m")),
    };
    let Some(id) = SandboxId::parse(segment).ok().filter(host::is_label) else {
        return invalid(
            "id",
            format!(
                "sandbox id {segment:?} cannot be a DNS label (lower-case letters, digits and '-'), so no preview name can carry it"
            ),
        );
    };
    if let Err(unknown) = super::sandboxes::known_sandbox(state, &id) {
        return *unknown;
    }
    link(state, &previews, &id, port, user, ttl)
}

fn link(
    state: &ProxyState,
    previews: &Previews,
    id: &SandboxId,
    port: u16,
    user: &str,
    ttl: Duration,
) -> AdminResponse {
    let pid = match Previews::new_id() {
        Ok(p) => p,
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, "preview_failed", e),
    };
    let expires = SystemTime::now() + ttl;
    let exp = expires
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    // The link is for the sandbox's incarnation now: one created again with the id is not opened by it.
    let generation = state.current();
    let found = preview_live(state, &generation, id);
    let inc = found
        .as_ref()
        .map(|(sandbox, _)| sandbox.incarnation().to_string())
        .unwrap_or_default();
    let claims = Claims::new(pid.clone(), (id.clone(), inc), port, user.to_string(), exp);
    // The same checks the listener makes when the link is opened: nothing is made that could not open.
    let opens = preview_allowed(previews, &claims, (port, id), found, |s| {
        generation.policy_for(s, Some(&state.control))
    })
    .and_then(|(_, cidrs)| preview_address(&generation, &cidrs, port));
    if let Err(refused) = opens {
        // A sandbox without an address of its own is the sandbox's state, not the request's fault.
        let status = if refused.status() == StatusCode::BAD_GATEWAY {
            StatusCode::CONFLICT
        } else {
            StatusCode::UNPROCESSABLE_ENTITY
        };
        return error(status, refused.reason().code(), refused.public_message());
    }
    let url = match previews.link(&claims) {
        Ok(u) => u,
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, "preview_failed", e),
    };
    tracing::info!(sandbox = %id, preview = %pid, port, user, "preview link made");
    let acted = super::acted::Acted {
        detail: Some(format!("preview {pid} of port {port} for user {user}")),
        ..super::acted::Acted::default()
    };
    let resp = json_response(
        StatusCode::CREATED,
        &json!({
            "id": pid,
            "sandbox": id,
            "port": port,
            "user": user,
            "url": url,
            "expires_at": crate::rfc3339::seconds(expires),
            "session_seconds": previews.session_ttl().as_secs(),
        }),
    );
    super::acted::with(resp, acted)
}

/// End preview `pid` of the sandbox the path segment `segment` names at once (text that is no id has none).
pub(super) fn revoke(state: &ProxyState, segment: &str, pid: &str) -> AdminResponse {
    let Some(previews) = state.previews.as_ref() else {
        return error(StatusCode::NOT_FOUND, "previews_off", "previews are off");
    };
    match SandboxId::parse(segment) {
        Ok(id) if previews.revoke(&id, pid) => {
            tracing::info!(sandbox = %id, preview = pid, "preview revoked");
            json_response(StatusCode::OK, &json!({"id": pid, "sandbox": id, "revoked": true}))
        }
        _ => error(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("sandbox {segment:?} has no preview {pid:?} that could still be opened"),
        ),
    }
}

fn invalid(field: &str, message: String) -> AdminResponse {
    error(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid",
        format!("{field}: {message}"),
    )
}
