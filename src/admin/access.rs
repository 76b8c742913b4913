//! Who is calling the admin API and whether they may: the bearer token's principal (or, for the console, the
//! signed-in session's), the role each route needs, and the 401/403 answers (each one audited).

use std::net::SocketAddr;

use http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderValue, Method, StatusCode};

use super::response::{AdminResponse, error};
use crate::audit::AdminAction;
use crate::principal::{Needs, Principal};
use crate::reason::Reason;
use crate::state::ProxyState;

/// The caller of one admin request: the principal and the address it called from. Handlers that change
/// something record it.
pub(crate) struct Caller {
    /// Who.
    pub(crate) principal: Principal,
    /// From where.
    pub(crate) client: SocketAddr,
}

/// What a route needs, and the name of the action its success is recorded as (`None`: a read, not recorded).
pub(super) fn route(segments: &[&str], method: &Method) -> (Needs, Option<&'static str>) {
    let write = |needs, action| (needs, Some(action));
    match (segments, method) {
        (["v1", "sandboxes"], &Method::POST) => write(Needs::Sandboxes, "sandbox_created"),
        (["v1", "sandboxes", _], &Method::PATCH) => write(Needs::Sandboxes, "sandbox_patched"),
        (["v1", "sandboxes", _], &Method::DELETE) => write(Needs::Sandboxes, "sandbox_revoked"),
        (["v1", "sandboxes", _, "renew"], &Method::POST) => write(Needs::Sandboxes, "sandbox_renewed"),
        (["v1", "sandboxes", _, "credentials"], &Method::POST) => write(Needs::Sandboxes, "credential_issued"),
        (["v1", "sandboxes", _, "rotate-ca"], &Method::POST) => write(Needs::Sandboxes, "ca_rotated"),
        (["v1", "sandboxes", _, "hold"], &Method::DELETE) => write(Needs::Sandboxes, "hold_lifted"),
        (["v1", "sandboxes", _, "previews"], &Method::POST) => write(Needs::Sandboxes, "preview_made"),
        (["v1", "sandboxes", _, "previews", _], &Method::DELETE) => write(Needs::Sandboxes, "preview_closed"),
        (["v1", "approvals", _], &Method::POST) => write(Needs::Decide, "approval_decided"),
        (["v1", "grants", _], &Method::DELETE) => write(Needs::Decide, "grant_removed"),
        (["v1", "access", _], &Method::POST) => write(Needs::Decide, "access_decided"),
        (["v1", "access", _], &Method::DELETE) => write(Needs::Decide, "access_revoked"),
        (["v1", "reload"], &Method::POST) => write(Needs::Admin, "reload"),
        (["v1", "credentials", _, "refresh-token"], &Method::PUT) => write(Needs::Admin, "refresh_token_seeded"),
        _ => (Needs::Read, None),
    }
}

/// The principal whose bearer token `headers` carry, or the 401 (audited) that says what is missing.
#[expect(
    clippy::result_large_err,
    reason = "the error is the answer itself, built once per failed call"
)]
pub(super) fn authenticate(
    state: &ProxyState,
    headers: &HeaderMap,
    client: SocketAddr,
    action: &str,
) -> Result<Principal, AdminResponse> {
    let presented = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim());
    // SECURITY: every /v1 call needs an admin token; a missing or wrong one gets 401 and nothing else.
    let why = match presented {
        Some(token) => match state.current().admin_principal(token) {
            Some(p) => return Ok(p),
            None => "the bearer token is not one of control.admin_token / control.admin_tokens",
        },
        None => {
            "send `Authorization: Bearer <token>` with an admin token (control.admin_token or control.admin_tokens)"
        }
    };
    record_refusal(state, None, client, action, Reason::AdminUnauthorized, why);
    let mut resp = error(StatusCode::UNAUTHORIZED, "unauthorized", why);
    resp.headers_mut().insert(
        WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"cordon-admin\""),
    );
    Err(resp)
}

/// `Ok` when `caller` may do what `needs` asks, else the 403 (audited) that names the role it needs.
#[expect(
    clippy::result_large_err,
    reason = "the error is the answer itself, built once per failed call"
)]
pub(crate) fn authorize(state: &ProxyState, caller: &Caller, needs: Needs, action: &str) -> Result<(), AdminResponse> {
    match forbidden(state, caller, needs, action) {
        None => Ok(()),
        Some(why) => Err(error(StatusCode::FORBIDDEN, "forbidden", why)),
    }
}

/// `None` when `caller` may do what `needs` asks, else why not (naming the role it needs), recorded.
pub(super) fn forbidden(state: &ProxyState, caller: &Caller, needs: Needs, action: &str) -> Option<String> {
    // SECURITY: each route needs a role (admin/platform/approver/viewer); a principal without it gets 403 naming
    // the role, and nothing is done.
    if caller.principal.may(needs) {
        return None;
    }
    let why = format!(
        "{} needs the role {}; {:?} has {}",
        if action.is_empty() { "this call" } else { action },
        needs.roles().names().replace(", ", " or "),
        caller.principal.name,
        caller.principal.roles.names()
    );
    record_refusal(
        state,
        Some(&caller.principal),
        caller.client,
        action,
        Reason::AdminForbidden,
        &why,
    );
    Some(why)
}

/// Record an admin call refused for `reason` (its status is the reason's), by `principal` if one was known.
pub(super) fn record_refusal(
    state: &ProxyState,
    principal: Option<&Principal>,
    client: SocketAddr,
    action: &str,
    reason: Reason,
    why: &str,
) {
    let status = reason.answer().http_status().unwrap_or(403);
    crate::audit::admin(
        &state.audit,
        AdminAction {
            principal,
            client,
            action: if action.is_empty() { "read" } else { action },
            status,
            refused: Some(reason),
            sandbox: None,
            detail: Some(why.to_owned()),
            covered: None,
        },
    );
}
