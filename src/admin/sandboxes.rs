//! `/v1/sandboxes`: create, list, show, renew, revoke, and further credentials — and the `env` a sandbox
//! is started with.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;
use serde_json::{Value, json};

pub(super) use super::response::failed;
use super::response::{AdminResponse, error, json_response};
use crate::control::store::SandboxRow;
use crate::control::{self, ControlError, NewSandbox, Ttl};
use crate::generation::Generation;
use crate::identity::Sandbox;
use crate::names::SandboxId;
use crate::state::ProxyState;

fn rfc3339(secs: i64) -> Value {
    json!(crate::rfc3339::unix_seconds(secs))
}

fn sandbox_of(r: &SandboxRow) -> Sandbox {
    r.incarnation()
}

#[expect(
    clippy::result_large_err,
    reason = "the error is the answer itself, built once per failed call"
)]
fn ca_pem(state: &ProxyState, generation: &Generation, sandbox: &Sandbox) -> Result<String, AdminResponse> {
    state
        .ca(generation, sandbox)
        .map(|ca| ca.cert_pem().to_string())
        .map_err(|e| {
            tracing::error!(sandbox = %sandbox.id, "admin API: no CA: {e}");
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "ca_unavailable",
                format!("cannot load or create the sandbox's CA: {e}"),
            )
        })
}

pub(super) fn record_view(state: &ProxyState, r: &SandboxRow) -> Value {
    let (connections, tunnels) = state.sessions.counts(&r.id);
    let (policy, inline) = super::policy::view(&r.policy, r.inline_policy.as_deref());
    json!({
        "id": r.id,
        "user": r.user,
        "policy": policy,
        "inline_policy": inline,
        "labels": r.labels,
        "origin": "api",
        "created_at": rfc3339(r.created),
        "expires_at": rfc3339(r.expires),
        "revoked_at": r.revoked.map(rfc3339),
        "source_cidrs": r.source_cidrs,
        "open_connections": connections,
        "open_tunnels": tunnels,
        "violation": violation(state, &r.id),
        "model_spend": state.metrics.models.view_of(sandbox_of(r).incarnation().as_str()),
    })
}

/// What `on_violation` did to a sandbox: `held`, `suspended`, or nothing.
fn violation(state: &ProxyState, id: &SandboxId) -> Option<&'static str> {
    if state.violations.suspended(id) {
        Some("suspended")
    } else {
        state.violations.held(id).then_some("held")
    }
}

fn declared_view(state: &ProxyState, s: &Sandbox) -> Value {
    let (connections, tunnels) = state.sessions.counts(&s.id);
    json!({
        "id": s.id,
        "user": s.user,
        "policy": s.policy,
        "inline_policy": null,
        "labels": {},
        "origin": "config",
        "created_at": null,
        "expires_at": null,
        "revoked_at": null,
        "source_cidrs": state.current().config.sandbox(s.id.as_str()).map(|x| x.source_cidrs.clone()).unwrap_or_default(),
        "open_connections": connections,
        "open_tunnels": tunnels,
        "violation": violation(state, &s.id),
        "model_spend": state.metrics.models.view_of(s.incarnation().as_str()),
    })
}

/// `GET /v1/sandboxes`: declared ones and run-time ones (revoked ones until they are purged).
pub(super) fn list(state: &ProxyState) -> AdminResponse {
    json_response(StatusCode::OK, &json!({ "sandboxes": all(state) }))
}

/// Every sandbox, declared and made at run time, by id, as the API shows them.
pub(super) fn all(state: &ProxyState) -> Vec<Value> {
    let generation = state.current();
    let mut all: Vec<Value> = generation.identities.all().map(|s| declared_view(state, s)).collect();
    all.extend(state.control.list().iter().map(|r| record_view(state, r)));
    all.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    all
}

/// `GET /v1/sandboxes/{id}`, with its CA certificate.
pub(super) fn show(state: &ProxyState, id: &SandboxId) -> AdminResponse {
    let generation = state.current();
    let (mut view, sandbox) = if let Some(s) = generation.identities.get(id) {
        (declared_view(state, &s), (*s).clone())
    } else if let Some(r) = state.control.get(id) {
        (record_view(state, &r), sandbox_of(&r))
    } else {
        return failed(ControlError::NotFound(id.to_string()));
    };
    match ca_pem(state, &generation, &sandbox) {
        Ok(pem) => view["ca_certificate"] = json!(pem),
        Err(resp) => return resp,
    }
    json_response(StatusCode::OK, &view)
}

/// `GET /v1/sandboxes/{id}/ca-bundle`: the PEM bundle a sandbox's CA variables point at (its CA, the roots cordon
/// trusts upstream, and `upstream.extra_roots`), so intercepted and tunnelled destinations both verify.
pub(super) fn ca_bundle(state: &ProxyState, id: &SandboxId) -> AdminResponse {
    let generation = state.current();
    let sandbox = if let Some(s) = generation.identities.get(id) {
        (*s).clone()
    } else if let Some(r) = state.control.get(id).filter(|r| r.revoked.is_none()) {
        sandbox_of(&r)
    } else {
        return failed(ControlError::NotFound(id.to_string()));
    };
    match ca_pem(state, &generation, &sandbox) {
        Ok(pem) => {
            let bundle = crate::sandbox_env::ca_bundle(&pem, &generation.config.upstream.extra_roots);
            super::response::pem_response(bundle)
        }
        Err(resp) => resp,
    }
}

/// `POST /v1/sandboxes/{id}/rotate-ca`: a new CA for the names the sandbox's policy allows now; the old one is
/// no longer used (its leaves are forgotten) and its key is gone. Returns the new CA.
pub(super) async fn rotate_ca(state: &Arc<ProxyState>, sandbox_id: &SandboxId) -> AdminResponse {
    let id = sandbox_id;
    let generation = state.current();
    let sandbox = if let Some(s) = generation.identities.get(id) {
        (*s).clone()
    } else if let Some(r) = state
        .control
        .get(sandbox_id)
        .filter(|r| r.revoked.is_none() && r.expires > control::now())
    {
        sandbox_of(&r)
    } else {
        return failed(ControlError::NotFound(id.to_string()));
    };
    let (s, g) = (state.clone(), generation.clone());
    let rotated = tokio::task::spawn_blocking(move || {
        let policy = g.policy_for(&sandbox, Some(&s.control));
        tokio::runtime::Handle::current().block_on(s.cas.rotate(&sandbox.id, policy.as_deref()))
    })
    .await;
    match rotated {
        Ok(Ok(ca)) => {
            state.leaves.invalidate_sandbox(sandbox_id);
            tracing::info!(sandbox = %id, "CA rotated through the admin API");
            json_response(
                StatusCode::OK,
                &json!({"id": id, "rotated": true, "ca_certificate": ca.cert_pem()}),
            )
        }
        Ok(Err(e)) => failed(ControlError::Ca(e.to_string())),
        Err(e) => failed(ControlError::Ca(format!("the rotation task failed: {e}"))),
    }
}

fn text(body: &Value, field: &'static str) -> Result<Option<String>, ControlError> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ControlError::Invalid {
            field,
            message: "must be a string".into(),
        }),
    }
}

fn ttl(body: &Value) -> Result<Option<Duration>, ControlError> {
    match text(body, "ttl")? {
        None => Ok(None),
        Some(t) => humantime::parse_duration(&t)
            .map(Some)
            .map_err(|e| ControlError::Invalid {
                field: "ttl",
                message: format!("{t:?} is not a duration ({e}); write e.g. \"30m\" or \"2h\""),
            }),
    }
}

pub(super) fn unknown_fields(body: &Value, known: &[&str]) -> Result<(), ControlError> {
    if let Some(obj) = body.as_object()
        && let Some(k) = obj.keys().find(|k| !known.contains(&k.as_str()))
    {
        return Err(ControlError::Invalid {
            field: "body",
            message: format!("unknown field {k:?}; the fields are {}", known.join(", ")),
        });
    }
    Ok(())
}

fn new_sandbox(body: &Value, asked: &super::policy::AskedPolicy) -> Result<NewSandbox, ControlError> {
    unknown_fields(body, &["user", "policy", "id", "ttl", "labels", "source_cidrs"])?;
    let required = |field: &'static str| {
        text(body, field)?.ok_or(ControlError::Invalid {
            field,
            message: "is required".into(),
        })
    };
    let labels = match body.get("labels") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(v) => {
            serde_json::from_value::<BTreeMap<String, String>>(v.clone()).map_err(|_| ControlError::Invalid {
                field: "labels",
                message: "must be an object of strings".into(),
            })?
        }
    };
    Ok(NewSandbox {
        user: required("user")?,
        policy: asked.of.name.clone(),
        inline_policy: asked.of.inline.clone(),
        id: text(body, "id")?,
        ttl: ttl(body)?,
        labels,
        source_cidrs: super::sources::source_cidrs(body)?,
    })
}

fn bounds(generation: &Generation) -> Ttl {
    Ttl {
        default: generation.config.control.default_ttl,
        max: generation.config.control.max_ttl,
    }
}

/// What a sandbox is started with: its credential, proxy URL, CA, placeholders and environment.
#[expect(
    clippy::result_large_err,
    reason = "the error is the answer itself, built once per failed call"
)]
fn created(
    state: &ProxyState,
    generation: &Generation,
    r: &SandboxRow,
    credential: &str,
) -> Result<Value, AdminResponse> {
    let sandbox = sandbox_of(r);
    let ca = ca_pem(state, generation, &sandbox)?;
    let c = &generation.config.control;
    let base = c
        .proxy_url
        .clone()
        .unwrap_or_else(|| format!("http://{}", generation.config.listen.proxy));
    let proxy_url = base.replacen("http://", &format!("http://{}:{credential}@", r.id), 1);
    let allowed = generation
        .policy_for(&sandbox, Some(&state.control))
        .map(|p| p.credentials.clone())
        .unwrap_or_default();
    let placeholders: BTreeMap<String, String> = generation
        .credentials
        .placeholders_for(sandbox.incarnation(), &allowed)
        .into_iter()
        .map(|(name, value)| (name.to_string(), value))
        .collect();
    let aws = generation.credentials.aws_env(sandbox.incarnation(), &allowed);
    let env = crate::sandbox_env::sandbox_env(&proxy_url, &c.no_proxy, &c.ca_file, &placeholders, aws);
    let mut view = record_view(state, r);
    view["ca_certificate"] = json!(ca);
    view["credential"] = json!(credential);
    view["proxy_url"] = json!(proxy_url);
    view["placeholders"] = json!(placeholders);
    view["env"] = json!(env);
    Ok(view)
}

/// Run a blocking store call off the async threads.
pub(super) async fn blocking<T: Send + 'static>(
    state: &Arc<ProxyState>,
    f: impl FnOnce(&ProxyState) -> Result<T, ControlError> + Send + 'static,
) -> Result<T, ControlError> {
    let state = state.clone();
    tokio::task::spawn_blocking(move || f(&state))
        .await
        .unwrap_or_else(|e| Err(ControlError::Store(format!("the store task failed: {e}"))))
}

/// `POST /v1/sandboxes`.
pub(super) async fn create(state: &Arc<ProxyState>, body: Value) -> AdminResponse {
    let generation = state.current();
    let name = body
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or("new sandbox")
        .to_string();
    let asked = match super::policy::asked(&generation, &name, &body) {
        Ok(a) => a,
        Err(resp) => return resp,
    };
    let new = match new_sandbox(&body, &asked) {
        Ok(n) => n,
        Err(e) => return failed(e),
    };
    if let Some(overlap) = super::sources::declared_overlap(&generation, &new.source_cidrs) {
        return failed(overlap);
    }
    let g = generation.clone();
    let made = blocking(state, move |s| {
        let policy_known = |p: &str| g.named_policy(p).is_some();
        let declared = |id: &str| g.identities.named(id).is_some();
        // The CA is made before the record is stored: no stored sandbox without its CA.
        let prepare = |r: &SandboxRow| {
            s.cas.prepare(&r.id, &asked.policy).map_err(|e| {
                if s.shared().is_some_and(|x| x.state().state == "down") {
                    ControlError::Unavailable(e)
                } else {
                    ControlError::Ca(e)
                }
            })
        };
        s.control
            .create(new, bounds(&g), policy_known, declared, prepare, control::now())
    })
    .await;
    let (record, credential) = match made {
        Ok(m) => m,
        Err(e) => return failed(e),
    };
    tracing::info!(sandbox = %record.id, user = %record.user, policy = %record.policy, "sandbox created");
    match created(state, &generation, &record, &credential) {
        Ok(mut view) => {
            view["warnings"] = json!(asked.warnings);
            let acted = super::acted::Acted {
                sandbox: Some(record.id.to_string()),
                detail: Some(format!("user {}, policy {}", record.user, record.policy)),
                covered: None,
            };
            super::acted::with(json_response(StatusCode::CREATED, &view), acted)
        }
        Err(resp) => resp,
    }
}

/// The sandbox id a path segment names, or the 422 saying why the text cannot be one: the admin API's one way
/// from a path to an id (its handlers take the id).
pub(super) fn path_id(segment: &str) -> Result<SandboxId, ControlError> {
    SandboxId::parse(segment).map_err(|e| ControlError::Invalid {
        field: "id",
        message: e.to_string(),
    })
}

/// `id`, unless a declared sandbox has it (the file's sandboxes are not changed through the API).
pub(super) fn check_id(state: &ProxyState, id: &SandboxId) -> Result<SandboxId, ControlError> {
    if state.current().identities.get(id).is_some() {
        return Err(ControlError::Declared(id.to_string()));
    }
    Ok(id.clone())
}

/// `POST /v1/sandboxes/{id}/renew`.
pub(super) async fn renew(state: &Arc<ProxyState>, id: &SandboxId, body: Value) -> AdminResponse {
    let (id2, ttl) = match check_id(state, id)
        .and_then(|id| unknown_fields(&body, &["ttl"]).map(|()| id))
        .and_then(|id| Ok((id, ttl(&body)?)))
    {
        Ok(t) => t,
        Err(e) => return failed(e),
    };
    let b = bounds(&state.current());
    match blocking(state, move |s| s.control.renew(&id2, ttl, b, control::now())).await {
        Ok(r) => json_response(StatusCode::OK, &record_view(state, &r)),
        Err(e) => failed(e),
    }
}

/// `DELETE /v1/sandboxes/{id}`: revoke, and close what it has open.
pub(super) async fn revoke(state: &Arc<ProxyState>, id: &SandboxId) -> AdminResponse {
    let sandbox = match check_id(state, id) {
        Ok(sandbox) => sandbox,
        Err(e) => return failed(e),
    };
    let id2 = sandbox.clone();
    match blocking(state, move |s| s.control.revoke_sandbox(&id2, control::now())).await {
        Ok(r) => {
            state.sweep(false);
            // Its held requests are denied and its standing grants dropped.
            state.approvals.forget_sandbox(&sandbox);
            tracing::info!(sandbox = %r.id, "sandbox revoked");
            json_response(StatusCode::OK, &record_view(state, &r))
        }
        Err(e) => failed(e),
    }
}

/// `POST /v1/sandboxes/{id}/credentials`: a further credential for a live sandbox.
pub(super) async fn credentials(state: &Arc<ProxyState>, id: &SandboxId) -> AdminResponse {
    let id2 = match check_id(state, id) {
        Ok(id) => id,
        Err(e) => return failed(e),
    };
    let generation = state.current();
    match blocking(state, move |s| s.control.issue(&id2, control::now())).await {
        Ok((r, credential)) => match created(state, &generation, &r, &credential) {
            Ok(view) => json_response(StatusCode::OK, &view),
            Err(resp) => resp,
        },
        Err(e) => failed(e),
    }
}

/// Nothing, or 404 `not_found` if no sandbox, declared or made at run time (live or not), has the id `id`.
pub(super) fn known_sandbox(state: &ProxyState, id: &SandboxId) -> Result<(), Box<AdminResponse>> {
    if state.current().identities.get(id).is_some() || state.control.get(id).is_some() {
        Ok(())
    } else {
        Err(Box::new(no_sandbox(id.as_str())))
    }
}

/// The 404 for a path segment no sandbox has as its id (text that is no id names none).
pub(super) fn no_sandbox(segment: &str) -> AdminResponse {
    error(
        StatusCode::NOT_FOUND,
        "not_found",
        format!("no sandbox has the id {segment:?}"),
    )
}
