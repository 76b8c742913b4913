//! Access, in place of decide for one name: the sandbox asks cordon itself, at `access.cordon.internal` (plain
//! HTTP through its proxy; the name is never resolved or dialled), for access past its policy. `POST /v1/requests`
//! files a request (judged against the policy's boundary, counted against its `access.per_hour`, granted at once
//! when the policy says so and it lets no credential reach anywhere new), `GET /v1/requests` lists the sandbox's
//! own, `GET /v1/requests/ID` reads one. A CONNECT or a DNS query for the name is refused. A dry run answers
//! nothing. Writes `ctx.ending`.

use bytes::Bytes;
use http::{Method, Response, StatusCode, header};
use serde_json::{Value, json};

use crate::audit::AccessRecord;
use crate::control::access::{AccessBook, AccessRequest, AccessState, NotFiled};
use crate::error::ProxyError;
use crate::generation::NotGrantable;
use crate::identity::Sandbox;
use crate::proxy::ctx::{Ctx, Ended, request, slot};
use crate::proxy::effects::Effects;
use crate::proxy::input::Intent;
use crate::proxy::notes::Note;
use crate::reason::{ACCESS_HOST, ASK_AT, Reason};

/// The most bytes an access request's body may have.
const MOST_BODY: usize = 64 * 1024;
/// The most characters of a request's `reason`.
const MOST_REASON: usize = 1000;

/// Whether the exchange is for cordon's own name (this phase's, not decide's). The target parser has made the
/// name lowercase without a trailing dot, so every spelling of it is one comparison, with nothing allocated.
pub(crate) fn asks_cordon(ctx: &Ctx) -> bool {
    ctx.target
        .as_ref()
        .is_some_and(|t| matches!(&t.host, crate::target::Host::Name(n) if n == ACCESS_HOST))
}

fn refused(code: Reason, message: impl Into<String>) -> ProxyError {
    ProxyError::Access {
        code,
        message: message.into(),
        details: Vec::new(),
    }
}

/// Answer the sandbox's request to cordon.
pub(crate) async fn run(ctx: &mut Ctx, fx: &impl Effects) -> Result<(), ProxyError> {
    let sandbox = slot(&ctx.sandbox)?.clone();
    if !matches!(ctx.intent, Intent::Request { inside: None, .. }) {
        // SECURITY: the name is cordon's own: never resolved, never dialled, never a tunnel a sandbox could
        // reach something else through.
        return Err(refused(
            Reason::AccessNeedsHttp,
            format!("{ACCESS_HOST} is answered by cordon itself, as plain http:// through the proxy: {ASK_AT}"),
        ));
    }
    fx.note(Note::AnsweredByCordon);
    ctx.audit.allowed(None, None);
    let generation = ctx.generation.clone();
    let req = request(&mut ctx.intent)?;
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let Some(control) = fx.control() else {
        ctx.ending = Some(Ended::Dry);
        return Ok(());
    };
    let now = crate::control::now();
    let (status, answer, record) = match (&method, segments.as_slice()) {
        (&Method::POST, ["v1", "requests"]) => {
            let body = fx.body(req).await?.unwrap_or_default();
            file(&generation, control, &sandbox, &body, now)?
        }
        (&Method::GET, ["v1", "requests"]) => {
            let own: Vec<AccessRequest> = control
                .access
                .list(now)
                .into_iter()
                .filter(|r| r.who.incarnation() == sandbox.incarnation())
                .collect();
            (
                StatusCode::OK,
                json!({ "requests": own }),
                AccessRecord {
                    id: None,
                    outcome: "listed",
                },
            )
        }
        (&Method::GET, ["v1", "requests", id]) => {
            // SECURITY: a sandbox reads only its own requests (this incarnation's): another's id is unknown to it.
            let r = control
                .access
                .get(id, now)
                .filter(|r| r.who.incarnation() == sandbox.incarnation())
                .ok_or_else(|| {
                    refused(
                        Reason::AccessUnknown,
                        format!("this sandbox filed no access request {id:?}"),
                    )
                })?;
            let record = AccessRecord {
                id: Some(r.id.clone()),
                outcome: "read",
            };
            (StatusCode::OK, shown(&r), record)
        }
        _ => {
            return Err(refused(
                Reason::AccessUnknown,
                format!("cordon answers POST and GET /v1/requests and GET /v1/requests/ID here, not {method} {path}"),
            ));
        }
    };
    ctx.audit.access(record);
    ctx.ending = Some(Ended::Respond(json_answer(status, &answer), None));
    Ok(())
}

/// A request as the sandbox reads it: the request, and where to read it again.
fn shown(r: &AccessRequest) -> Value {
    let mut v = serde_json::to_value(r).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.insert("poll".into(), json!(format!("{ASK_AT}/{}", r.id)));
    }
    v
}

fn json_answer(status: StatusCode, v: &Value) -> Response<crate::body::ProxyBody> {
    let mut resp = Response::new(crate::body::full(Bytes::from(format!("{v}\n"))));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    resp
}

/// The body of `POST /v1/requests`, read strictly.
struct AccessAsked {
    allow: Value,
    reason: String,
    lifetime: Option<std::time::Duration>,
}

fn invalid(details: Vec<String>) -> ProxyError {
    ProxyError::Access {
        code: Reason::AccessInvalid,
        message: "the access request cannot be read".into(),
        details,
    }
}

fn read(body: &[u8]) -> Result<AccessAsked, ProxyError> {
    if body.len() > MOST_BODY {
        return Err(invalid(vec![format!(
            "the body has {} bytes; an access request has at most {MOST_BODY}",
            body.len()
        )]));
    }
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        invalid(vec![format!(
            "the body is not JSON: {e}; send {{\"allow\": [...], \"reason\": \"...\"}}"
        )])
    })?;
    let Some(o) = v.as_object() else {
        return Err(invalid(vec![
            "the body is not a JSON object with allow, reason and lifetime".into(),
        ]));
    };
    let mut problems = Vec::new();
    for k in o.keys() {
        if !["allow", "reason", "lifetime"].contains(&k.as_str()) {
            problems.push(format!("{k}: unknown field; the fields are allow, reason, lifetime"));
        }
    }
    let reason = match o.get("reason") {
        Some(Value::String(r)) if r.trim().is_empty() => {
            problems.push("reason: is empty; say in words why the task needs this access".into());
            String::new()
        }
        Some(Value::String(r)) if r.chars().count() > MOST_REASON => {
            problems.push(format!("reason: longer than {MOST_REASON} characters"));
            String::new()
        }
        // SECURITY: the reason is shown to people (console, `cordon approvals list` on a terminal): no control
        // characters, so no escape sequence a sandbox writes reaches a person's terminal.
        Some(Value::String(r)) if r.chars().any(char::is_control) => {
            problems.push("reason: has control characters (line breaks, escapes); write one plain line".into());
            String::new()
        }
        Some(Value::String(r)) => r.clone(),
        Some(_) => {
            problems.push("reason: expected text".into());
            String::new()
        }
        None => {
            problems.push("reason: missing; say in words why the task needs this access".into());
            String::new()
        }
    };
    let lifetime = match o.get("lifetime") {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) => match humantime::parse_duration(t) {
            Ok(d) if !d.is_zero() => Some(d),
            Ok(_) => {
                problems.push("lifetime: is zero; write e.g. \"30m\"".into());
                None
            }
            Err(e) => {
                problems.push(format!(
                    "lifetime: {t:?} is not a duration ({e}); write e.g. \"30m\", \"2h\""
                ));
                None
            }
        },
        Some(_) => {
            problems.push("lifetime: expected a duration as text, e.g. \"30m\"".into());
            None
        }
    };
    let allow = match o.get("allow") {
        Some(a) => {
            if let Err(e) = crate::config::access::requested_rules(a) {
                problems.extend(e);
            }
            a.clone()
        }
        None => {
            problems.push("allow: missing; name the rules asked for, as a policy's allow: entries".into());
            Value::Null
        }
    };
    if !problems.is_empty() {
        return Err(invalid(problems));
    }
    Ok(AccessAsked {
        allow,
        reason,
        lifetime,
    })
}

/// File the request in `body`: read, judged, counted, kept (granted at once where the policy says so).
fn file(
    generation: &crate::generation::Generation,
    control: &crate::control::Control,
    sandbox: &std::sync::Arc<Sandbox>,
    body: &[u8],
    now: i64,
) -> Result<(StatusCode, Value, AccessRecord), ProxyError> {
    let asked = read(body)?;
    let judged = match generation.judge_access(sandbox, control, &asked.allow) {
        Ok(j) => j,
        Err(NotGrantable::NotOffered(policy)) => {
            return Err(refused(
                Reason::AccessNotOffered,
                format!("the sandbox's policy {policy:?} offers no asking for access; do without it, or ask a person"),
            ));
        }
        Err(NotGrantable::Invalid(details)) => return Err(invalid(details)),
        Err(NotGrantable::PastBoundary(policy, past)) => {
            return Err(ProxyError::Access {
                code: Reason::AccessPastBoundary,
                message: format!(
                    "the request goes past the boundary of policy {policy:?}: nothing of it can be granted"
                ),
                details: past
                    .iter()
                    .map(|a| match &a.example {
                        Some(e) => format!("{}: {} (for example {e})", a.path, a.message),
                        None => format!("{}: {}", a.path, a.message),
                    })
                    .collect(),
            });
        }
        Err(NotGrantable::NothingNew) => {
            return Ok((
                StatusCode::OK,
                json!({"state": "not_needed", "message": "the sandbox's policy already allows all of it; nothing was filed"}),
                AccessRecord {
                    id: None,
                    outcome: "not_needed",
                },
            ));
        }
    };
    let lifetime = match asked.lifetime {
        Some(d) if d > judged.terms.max_lifetime => {
            return Err(invalid(vec![format!(
                "lifetime: {} is longer than policy {:?} grants (access.max_lifetime {})",
                humantime::format_duration(d),
                judged.policy,
                humantime::format_duration(judged.terms.max_lifetime)
            )]));
        }
        Some(d) => d,
        None => judged.terms.max_lifetime,
    };
    control
        .access
        .count(&sandbox.id, judged.terms.per_hour)
        .map_err(|e| too_often(&e))?;
    // SECURITY: granted without a person only when the operator said so for the policy, the request lies inside
    // the boundary (judged above), no credential of the policy could be sent where it lets a request go, and it
    // adds only destinations, ports, methods, paths, tools or operations.
    // Nor when it would take a person out of a request the policy holds for one, or cordon's sight out of a
    // connection (a tunnel where it intercepted, report mode): those a person grants.
    let auto = judged.terms.auto_grant
        && !judged.reaches_credentials
        && judged.adds.iter().all(|a| {
            !matches!(
                a.kind.as_str(),
                "approval no longer asked" | "TLS mode" | "report mode where it enforced" | "rule"
            )
        });
    let mut r = AccessRequest {
        id: AccessBook::fresh_id(),
        who: sandbox.clone(),
        sandbox: sandbox.id.as_str().to_string(),
        user: sandbox.user.clone(),
        policy: judged.policy,
        allow: asked.allow,
        reason: asked.reason,
        lifetime_seconds: lifetime.as_secs().max(1),
        adds: judged.adds,
        reaches_credentials: judged.reaches_credentials,
        state: AccessState::Pending,
        filed_at: crate::rfc3339::unix_seconds(now),
        decided_by: None,
        decided_at: None,
        expires_at: None,
        filed: now,
        expires: None,
    };
    if auto {
        let end = now.saturating_add(i64::try_from(r.lifetime_seconds).unwrap_or(i64::MAX));
        r.state = AccessState::Granted;
        r.decided_by = Some(crate::principal::CORDON.to_string());
        r.decided_at = Some(r.filed_at.clone());
        r.expires = Some(end);
        r.expires_at = Some(crate::rfc3339::unix_seconds(end));
    }
    let answer = shown(&r);
    let record = AccessRecord {
        id: Some(r.id.clone()),
        outcome: if auto { "granted" } else { "filed" },
    };
    tracing::info!(sandbox = %sandbox.id, id = %r.id, state = r.state.as_str(), adds = r.adds.len(),
        "an access request filed from inside the sandbox");
    control.access.file(r, now).map_err(|e| too_often(&e))?;
    let status = if auto {
        StatusCode::CREATED
    } else {
        StatusCode::ACCEPTED
    };
    Ok((status, answer, record))
}

fn too_often(e: &NotFiled) -> ProxyError {
    let message = match e {
        NotFiled::TooOften(n) => format!("the sandbox asked {n} times in the last hour, as many as its policy allows"),
        NotFiled::TooManyWaiting => format!(
            "{} of the sandbox's requests already wait for a person",
            crate::control::access::MOST_PENDING_PER_SANDBOX
        ),
        NotFiled::Full => "cordon keeps as many access requests as it can; decide what waits".into(),
    };
    refused(Reason::AccessTooOften, message)
}
