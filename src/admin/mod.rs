//! The admin API: its own listener (never the proxy's), bearer-token authentication, JSON in and out.
//! Health, readiness and metrics are open (probes and scrapers carry no token); everything under `/v1`
//! needs the token. The OpenAPI description is `docs/openapi.yaml`.

mod access;
mod acted;
mod approvals;
mod patch;
mod policy;
mod previews;
mod response;
mod sandboxes;
mod sources;

pub(crate) use response::{AdminResponse, error, json_response};

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{ALLOW, CONTENT_TYPE};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::reload::{Reloader, Trigger};
use crate::state::ProxyState;

/// The largest JSON body the admin API reads.
const MAX_BODY: usize = 64 * 1024;

/// Every route: method and path pattern (`{id}` is a sandbox id). `docs/openapi.yaml` describes exactly these,
/// which a test checks.
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/metrics"),
    ("GET", "/v1/sandboxes"),
    ("POST", "/v1/sandboxes"),
    ("GET", "/v1/sandboxes/{id}"),
    ("PATCH", "/v1/sandboxes/{id}"),
    ("DELETE", "/v1/sandboxes/{id}"),
    ("POST", "/v1/sandboxes/{id}/renew"),
    ("POST", "/v1/sandboxes/{id}/credentials"),
    ("GET", "/v1/sandboxes/{id}/ca-bundle"),
    ("POST", "/v1/sandboxes/{id}/rotate-ca"),
    ("DELETE", "/v1/sandboxes/{id}/hold"),
    ("POST", "/v1/sandboxes/{id}/previews"),
    ("DELETE", "/v1/sandboxes/{id}/previews/{preview}"),
    ("POST", "/v1/reload"),
    ("GET", "/v1/approvals"),
    ("POST", "/v1/approvals/{id}"),
    ("GET", "/v1/grants"),
    ("DELETE", "/v1/grants/{id}"),
    ("GET", "/v1/replicas"),
];

/// Serve the admin API until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    state: Arc<ProxyState>,
    reloader: Arc<Reloader>,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => return,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!("admin accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let (state, reloader) = (state.clone(), reloader.clone());
        tokio::spawn(async move {
            let service = service_fn(move |req: Request<Incoming>| {
                let (state, reloader) = (state.clone(), reloader.clone());
                async move { Ok::<_, Infallible>(handle(&state, &reloader, req, peer).await) }
            });
            let result = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(std::time::Duration::from_secs(10))
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Err(e) = result {
                tracing::debug!(%peer, "admin connection ended: {e}");
            }
        });
    }
}

/// Route one request: the open endpoints, then who calls and whether they may, then the handler; a change that
/// succeeded is recorded with its principal.
async fn handle(
    state: &Arc<ProxyState>,
    reloader: &Reloader,
    req: Request<Incoming>,
    client: std::net::SocketAddr,
) -> AdminResponse {
    let path = req.uri().path().to_string();
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let method = req.method().clone();
    let open = match segments.as_slice() {
        ["healthz"] => Some(("GET", json_response(StatusCode::OK, &json!({"status": "ok"})))),
        ["readyz"] => Some(("GET", ready(state))),
        ["metrics"] => Some(("GET", metrics(state))),
        _ => None,
    };
    if let Some((allowed, resp)) = open {
        return if method.as_str() == allowed {
            resp
        } else {
            not_allowed(allowed)
        };
    }
    if segments.first() != Some(&"v1") {
        return error(StatusCode::NOT_FOUND, "not_found", format!("no such endpoint: {path}"));
    }
    let (needs, action) = access::route(&segments, &method);
    let principal = match access::authenticate(state, req.headers(), client, action.unwrap_or("")) {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let caller = access::Caller { principal, client };
    if let Err(resp) = access::authorize(state, &caller, needs, action.unwrap_or("")) {
        return resp;
    }
    let path_sandbox = match segments.as_slice() {
        ["v1", "sandboxes", id, ..] => Some(*id),
        _ => None,
    };
    let mut resp = route(state, reloader, req, &caller, &segments, &method).await;
    if let Some(action) = action {
        acted::record(state, &caller, action, path_sandbox, &mut resp);
    }
    resp
}

/// The handler of a `/v1` route.
async fn route(
    state: &Arc<ProxyState>,
    reloader: &Reloader,
    req: Request<Incoming>,
    caller: &access::Caller,
    segments: &[&str],
    method: &Method,
) -> AdminResponse {
    let path = req.uri().path().to_string();
    match (segments, method) {
        (["v1", "sandboxes"], &Method::GET) => sandboxes::list(state),
        (["v1", "sandboxes"], &Method::POST) => match body(req).await {
            Ok(v) => sandboxes::create(state, v).await,
            Err(resp) => resp,
        },
        (["v1", "sandboxes"], _) => not_allowed("GET, POST"),
        (["v1", "sandboxes", id], &Method::GET) => sandboxes::show(state, id),
        (["v1", "sandboxes", id], &Method::DELETE) => sandboxes::revoke(state, id).await,
        (["v1", "sandboxes", id], &Method::PATCH) => {
            let id = id.to_string();
            match body(req).await {
                Ok(v) => patch::patch(state, &id, v).await,
                Err(resp) => resp,
            }
        }
        (["v1", "sandboxes", _], _) => not_allowed("GET, PATCH, DELETE"),
        (["v1", "sandboxes", id, "renew"], &Method::POST) => {
            let id = id.to_string();
            match body(req).await {
                Ok(v) => sandboxes::renew(state, &id, v).await,
                Err(resp) => resp,
            }
        }
        (["v1", "sandboxes", id, "credentials"], &Method::POST) => sandboxes::credentials(state, id).await,
        (["v1", "sandboxes", _, "renew" | "credentials"], _) => not_allowed("POST"),
        (["v1", "sandboxes", id, "ca-bundle"], &Method::GET) => sandboxes::ca_bundle(state, id),
        (["v1", "sandboxes", _, "ca-bundle"], _) => not_allowed("GET"),
        (["v1", "sandboxes", id, "rotate-ca"], &Method::POST) => sandboxes::rotate_ca(state, id).await,
        (["v1", "sandboxes", _, "rotate-ca"], _) => not_allowed("POST"),
        (["v1", "sandboxes", id, "previews"], &Method::POST) => {
            let id = id.to_string();
            match body(req).await {
                Ok(v) => previews::create(state, &id, v),
                Err(resp) => resp,
            }
        }
        (["v1", "sandboxes", _, "previews"], _) => not_allowed("POST"),
        (["v1", "sandboxes", id, "previews", pid], &Method::DELETE) => previews::revoke(state, id, pid),
        (["v1", "sandboxes", _, "previews", _], _) => not_allowed("DELETE"),
        (["v1", "sandboxes", id, "hold"], &Method::DELETE) => lift_hold(state, id),
        (["v1", "sandboxes", _, "hold"], _) => not_allowed("DELETE"),
        (["v1", "reload"], &Method::POST) => reload(state, reloader).await,
        (["v1", "replicas"], &Method::GET) => replicas(state).await,
        (["v1", "replicas"], _) => not_allowed("GET"),
        (["v1", "approvals"], &Method::GET) => approvals::list(state).await,
        (["v1", "approvals"], _) => not_allowed("GET"),
        (["v1", "approvals", id], &Method::POST) => {
            let id = id.to_string();
            match body(req).await {
                Ok(v) => approvals::decide(state, caller, &id, &v).await,
                Err(resp) => resp,
            }
        }
        (["v1", "approvals", _], _) => not_allowed("POST"),
        (["v1", "grants"], &Method::GET) => approvals::grants(state),
        (["v1", "grants"], _) => not_allowed("GET"),
        (["v1", "grants", id], &Method::DELETE) => approvals::revoke_grant(state, id).await,
        (["v1", "grants", _], _) => not_allowed("DELETE"),
        (["v1", "reload"], _) => not_allowed("POST"),
        _ => error(StatusCode::NOT_FOUND, "not_found", format!("no such endpoint: {path}")),
    }
}

/// The JSON body of a request: an object, at most [`MAX_BODY`] bytes; an empty body is `{}`.
async fn body(req: Request<Incoming>) -> Result<Value, AdminResponse> {
    let bytes = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return Err(error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                format!("the body is over {MAX_BODY} bytes, or was cut off"),
            ));
        }
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(v) if v.is_object() => Ok(v),
        Ok(_) => Err(error(
            StatusCode::BAD_REQUEST,
            "bad_json",
            "the body must be a JSON object",
        )),
        Err(e) => Err(error(
            StatusCode::BAD_REQUEST,
            "bad_json",
            format!("the body is not JSON: {e}"),
        )),
    }
}

fn ready(state: &ProxyState) -> AdminResponse {
    let mut problems = Vec::new();
    let generation = state.current();
    let dir = &generation.config.ca.dir;
    if let Err(e) = std::fs::create_dir_all(dir) {
        problems.push(format!("the CA folder {} is not usable: {e}", dir.display()));
    }
    if let Err(e) = state.control.refresh() {
        problems.push(format!("the sandbox store is not readable: {e}"));
    }
    if state.hard_stop.is_cancelled() {
        problems.push("shutting down: the drain deadline passed".to_string());
    } else if state.draining.is_cancelled() {
        problems.push("draining: cordon is stopping, no new connections are taken".to_string());
    }
    // SECURITY: a credential cordon could not supply the last time it tried (its issuer or vault down) makes the
    // replica unready, naming it: every request that needs it would fail here.
    let failing = generation.credentials.secrets().supply.failing();
    for (name, f) in &failing {
        problems.push(format!("credential {name} cannot be supplied now: {}", f.error));
    }
    let credentials: serde_json::Map<String, serde_json::Value> = failing
        .iter()
        .map(|(name, f)| {
            let since = f.since.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            (
                name.clone(),
                json!({"state": "failing", "error": f.error, "since": since}),
            )
        })
        .collect();
    let audit = state.audit.health().map(crate::audit::Health::state);
    if let Some(a) = audit.as_ref().filter(|a| a.state != "up") {
        let why = a.error.as_deref().unwrap_or("unknown");
        problems.push(format!("audit records cannot be written ({why}): requests are refused"));
    }
    // A PostgreSQL store that is down leaves the replica ready: known sandboxes keep working (writes get 503),
    // and taking every replica out of service at once would stop them all. It is reported, not failed.
    let store = state.shared().map(|s| s.state());
    if problems.is_empty() {
        json_response(
            StatusCode::OK,
            &json!({"ready": true, "generation": generation.number, "store": store, "audit": audit, "credentials": credentials}),
        )
    } else {
        json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"ready": false, "problems": problems, "store": store, "audit": audit, "credentials": credentials}),
        )
    }
}

/// `GET /v1/replicas`: the replicas sharing the PostgreSQL store, from its registry (this one alone otherwise).
async fn replicas(state: &ProxyState) -> AdminResponse {
    let Some(shared) = state.shared() else {
        return json_response(
            StatusCode::OK,
            &json!({"shared": false, "live": 1, "replicas": [{"id": "local", "self": true, "live": true}]}),
        );
    };
    match shared.registry.list().await {
        Ok(list) => {
            let live = list.iter().filter(|r| r.live).count();
            json_response(StatusCode::OK, &json!({"shared": true, "live": live, "replicas": list}))
        }
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, "store_unavailable", e.to_string()),
    }
}

/// `DELETE /v1/sandboxes/{id}/hold`: lift what `on_violation` did to a sandbox (a hold, or a declared sandbox's
/// suspension); `lifted` says whether there was anything to lift. A run-time sandbox it revoked stays revoked, as one
/// revoked through the API does.
fn lift_hold(state: &ProxyState, id: &str) -> AdminResponse {
    if let Some(unknown) = sandboxes::unknown_sandbox(state, id) {
        return unknown;
    }
    let lifted = state.violations.lift(id);
    if lifted {
        tracing::info!(sandbox = id, "on_violation: lifted through the admin API");
    }
    json_response(StatusCode::OK, &json!({"sandbox": id, "lifted": lifted}))
}

fn metrics(state: &ProxyState) -> AdminResponse {
    if let Some(audit) = state.audit.health().map(crate::audit::Health::state) {
        state.metrics.audit.set_output(audit.state == "up", audit.dropped);
    }
    let mut resp = Response::new(Full::new(Bytes::from(state.metrics.encode())));
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(crate::metrics::CONTENT_TYPE));
    resp
}

async fn reload(state: &Arc<ProxyState>, reloader: &Reloader) -> AdminResponse {
    match reloader.reload(state, Trigger::Api).await {
        Ok(done) => acted::with(
            json_response(
                StatusCode::OK,
                &json!({"generation": done.generation, "source": done.source}),
            ),
            acted::Acted {
                detail: Some(format!("generation {}", done.generation)),
                ..acted::Acted::default()
            },
        ),
        Err(e) => {
            let mut body = json!({"error": {"code": e.code(), "message": e.to_string()}});
            if !e.details().is_empty() {
                body["error"]["details"] = json!(e.details());
            }
            json_response(e.status(), &body)
        }
    }
}

fn not_allowed(allow: &'static str) -> AdminResponse {
    let mut resp = error(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("this endpoint takes {allow}"),
    );
    resp.headers_mut().insert(ALLOW, HeaderValue::from_static(allow));
    resp
}
