//! Where an admin-side request goes: the console's paths to the console, the open endpoints (probes, metrics),
//! and `/v1` after its listener, its caller and the caller's role are checked; a change that succeeded is
//! recorded with its principal, and the console's open pages are told.

use std::sync::Arc;

use http::header::LOCATION;
use http::{HeaderValue, Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use serde_json::json;

use super::response::{AdminResponse, Body, body, boxed, error, json_response, not_allowed};
use super::surface::{Conn, Surface};
use super::{access, acted, approvals, console, health, patch, previews, requests, sandboxes, signins};
use crate::names::SandboxId;
use crate::reason::Reason;
use crate::reload::{ReloadTrigger, Reloader};
use crate::state::ProxyState;

/// What the admin side of one running cordon serves from: the state, the reloader, and the console.
pub struct Admin {
    pub(super) state: Arc<ProxyState>,
    reloader: Arc<Reloader>,
    console: Option<Arc<console::Console>>,
}

impl Admin {
    /// The admin API of `state` alone, without the console.
    pub(super) fn without_console(state: Arc<ProxyState>, reloader: Arc<Reloader>) -> Admin {
        Admin {
            state,
            reloader,
            console: None,
        }
    }

    /// The admin side of `state`, with the console its configuration asks for (whose identity provider is then
    /// asked for in the background).
    pub async fn open(state: Arc<ProxyState>, reloader: Arc<Reloader>) -> Result<Arc<Admin>, String> {
        let console = console::Console::open(&state).await?;
        Ok(Arc::new(Admin {
            state,
            reloader,
            console,
        }))
    }

    /// The surface of `listen.admin` as configured.
    pub fn admin_surface(&self) -> Surface {
        let generation = self.state.current();
        let c = &generation.config;
        Surface::Admin {
            api: c.listen.admin_api_served(c.admin_tls.is_some()),
            console: self.console.is_some() && c.listen.console.is_none(),
            client_certs: c.admin_tls.as_ref().is_some_and(|t| t.client_ca.is_some()),
        }
    }
}

/// Route one request of connection `conn`: the console's paths to it, the open endpoints, then who calls and
/// whether they may, then the handler; a change that succeeded is recorded with its principal.
pub(super) async fn handle(
    admin: &Admin,
    conn: Conn,
    req: Request<Incoming>,
    client: std::net::SocketAddr,
) -> Response<Body> {
    let state = &admin.state;
    let path = req.uri().path().to_string();
    let (api, console_here, client_certs) = match conn.surface {
        Surface::Admin {
            api,
            console,
            client_certs,
        } => (api, console, client_certs),
        Surface::Console => (true, true, false),
    };
    let console_path = path == "/console" || path.starts_with("/console/");
    if let (true, true, Some(console)) = (console_path, console_here, &admin.console) {
        if !api {
            return boxed(needs_tls(state, client, &path));
        }
        // SECURITY: the console's token sign-in and token sessions need what /v1 needs: on a listener that
        // asks for client certificates, one; on listen.console (which asks for none) with admin.tls.client_ca,
        // they are refused (people sign in through the identity provider).
        let certs = console::Certs {
            needed: client_certs
                || state
                    .current()
                    .config
                    .admin_tls
                    .as_ref()
                    .is_some_and(|t| t.client_ca.is_some()),
            presented: conn.client_cert,
        };
        return console::handle(console, state, req, client, certs).await;
    }
    if conn.surface == Surface::Console {
        return boxed(match path.as_str() {
            "/" => {
                let mut resp = error(StatusCode::SEE_OTHER, "see_other", "the console is at /console/");
                resp.headers_mut()
                    .insert(LOCATION, HeaderValue::from_static("/console/"));
                resp
            }
            _ => error(StatusCode::NOT_FOUND, "not_found", format!("no such page: {path}")),
        });
    }
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let method = req.method().clone();
    let open = match segments.as_slice() {
        ["healthz"] => Some(("GET", json_response(StatusCode::OK, &json!({"status": "ok"})))),
        ["readyz"] => Some(("GET", health::ready(state))),
        ["metrics"] => Some(("GET", health::metrics(state))),
        _ => None,
    };
    if let Some((allowed, resp)) = open {
        return boxed(if method.as_str() == allowed {
            resp
        } else {
            not_allowed(allowed)
        });
    }
    if segments.first() != Some(&"v1") {
        return boxed(error(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no such endpoint: {path}"),
        ));
    }
    // SECURITY: admin tokens never cross a network in plain text: off loopback, /v1 needs admin.tls.
    if !api {
        return boxed(needs_tls(state, client, &path));
    }
    let (needs, action) = access::route(&segments, &method);
    // SECURITY: with admin.tls.client_ca, a platform's call needs its client certificate as well as its token.
    if client_certs && !conn.client_cert {
        let why = "this listener asks /v1 callers for a client certificate (admin.tls.client_ca): present one";
        access::record_refusal(
            state,
            None,
            client,
            action.unwrap_or("read"),
            Reason::AdminUnauthorized,
            why,
        );
        return boxed(error(StatusCode::UNAUTHORIZED, "client_certificate_required", why));
    }
    let principal = match access::authenticate(state, req.headers(), client, action.unwrap_or("")) {
        Ok(p) => p,
        Err(resp) => return boxed(resp),
    };
    let caller = access::Caller { principal, client };
    if let Err(resp) = access::authorize(state, &caller, needs, action.unwrap_or("")) {
        return boxed(resp);
    }
    let path_sandbox = match segments.as_slice() {
        ["v1", "sandboxes", id, ..] => Some(*id),
        _ => None,
    };
    let mut resp = route(state, &admin.reloader, req, &caller, &segments, &method).await;
    if let Some(action) = action {
        acted::record(state, &caller, action, path_sandbox, &mut resp);
        if let (true, Some(console)) = (resp.status().is_success(), &admin.console) {
            console.touched();
        }
    }
    boxed(resp)
}

/// The 403 for `/v1` or the console on a plain admin listener off loopback (recorded).
fn needs_tls(state: &ProxyState, client: std::net::SocketAddr, path: &str) -> AdminResponse {
    let why = format!(
        "{path} is not served over plain HTTP off loopback (admin tokens and sign-ins would cross the network in \
         the clear): set admin.tls, or listen.admin on a loopback address"
    );
    access::record_refusal(state, None, client, "read", Reason::AdminNeedsTls, &why);
    error(StatusCode::FORBIDDEN, Reason::AdminNeedsTls.code(), why)
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
        (["v1", "sandboxes", id], &Method::GET) => with_id(id, |id| sandboxes::show(state, &id)),
        (["v1", "sandboxes", id], &Method::DELETE) => match sandboxes::path_id(id) {
            Ok(id) => sandboxes::revoke(state, &id).await,
            Err(e) => sandboxes::failed(e),
        },
        (["v1", "sandboxes", id], &Method::PATCH) => {
            let id = sandboxes::path_id(id);
            match (body(req).await, id) {
                (Err(resp), _) => resp,
                (_, Err(e)) => sandboxes::failed(e),
                (Ok(v), Ok(id)) => patch::patch(state, &id, v).await,
            }
        }
        (["v1", "sandboxes", _], _) => not_allowed("GET, PATCH, DELETE"),
        (["v1", "sandboxes", id, "renew"], &Method::POST) => {
            let id = sandboxes::path_id(id);
            match (body(req).await, id) {
                (Err(resp), _) => resp,
                (_, Err(e)) => sandboxes::failed(e),
                (Ok(v), Ok(id)) => sandboxes::renew(state, &id, v).await,
            }
        }
        (["v1", "sandboxes", id, "credentials"], &Method::POST) => match sandboxes::path_id(id) {
            Ok(id) => sandboxes::credentials(state, &id).await,
            Err(e) => sandboxes::failed(e),
        },
        (["v1", "sandboxes", _, "renew" | "credentials"], _) => not_allowed("POST"),
        (["v1", "sandboxes", id, "ca-bundle"], &Method::GET) => with_id(id, |id| sandboxes::ca_bundle(state, &id)),
        (["v1", "sandboxes", _, "ca-bundle"], _) => not_allowed("GET"),
        (["v1", "sandboxes", id, "rotate-ca"], &Method::POST) => match sandboxes::path_id(id) {
            Ok(id) => sandboxes::rotate_ca(state, &id).await,
            Err(e) => sandboxes::failed(e),
        },
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
        (["v1", "sandboxes", id, "hold"], &Method::DELETE) => match SandboxId::parse(id) {
            Ok(id) => lift_hold(state, &id),
            Err(_) => sandboxes::no_sandbox(id),
        },
        (["v1", "sandboxes", _, "hold"], _) => not_allowed("DELETE"),
        (["v1", "reload"], &Method::POST) => reload(state, reloader).await,
        (["v1", "replicas"], &Method::GET) => health::replicas(state).await,
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
        (["v1", "access"], &Method::GET) => requests::list(state),
        (["v1", "access"], _) => not_allowed("GET"),
        (["v1", "access", id], &Method::POST) => {
            let id = id.to_string();
            match body(req).await {
                Ok(v) => requests::decide(state, caller, &id, &v),
                Err(resp) => resp,
            }
        }
        (["v1", "access", id], &Method::DELETE) => requests::revoke(state, caller, id),
        (["v1", "access", _], _) => not_allowed("POST, DELETE"),
        (["v1", "grants"], &Method::GET) => approvals::grants(state),
        (["v1", "grants"], _) => not_allowed("GET"),
        (["v1", "grants", id], &Method::DELETE) => approvals::revoke_grant(state, id).await,
        (["v1", "grants", _], _) => not_allowed("DELETE"),
        (["v1", "reload"], _) => not_allowed("POST"),
        (["v1", "credentials", name, "refresh-token"], &Method::PUT) => {
            let name = name.to_string();
            match body(req).await {
                Ok(v) => signins::seed(state, &name, &v).await,
                Err(resp) => resp,
            }
        }
        (["v1", "credentials", _, "refresh-token"], _) => not_allowed("PUT"),
        _ => error(StatusCode::NOT_FOUND, "not_found", format!("no such endpoint: {path}")),
    }
}

/// `DELETE /v1/sandboxes/{id}/hold`: lift what `on_violation` did to a sandbox (a hold, or a declared sandbox's
/// suspension); `lifted` says whether there was anything to lift. A run-time sandbox it revoked stays revoked, as one
/// revoked through the API does.
fn lift_hold(state: &ProxyState, id: &SandboxId) -> AdminResponse {
    if let Err(unknown) = sandboxes::known_sandbox(state, id) {
        return *unknown;
    }
    let lifted = state.violations.lift(id);
    if lifted {
        tracing::info!(sandbox = %id, "on_violation: lifted through the admin API");
    }
    json_response(StatusCode::OK, &json!({"sandbox": id, "lifted": lifted}))
}

/// `handle(id)` for the sandbox id a path segment names, or the 422 saying why it names none.
fn with_id(segment: &str, handle: impl FnOnce(SandboxId) -> AdminResponse) -> AdminResponse {
    match sandboxes::path_id(segment) {
        Ok(id) => handle(id),
        Err(e) => sandboxes::failed(e),
    }
}

/// `POST /v1/reload`.
async fn reload(state: &Arc<ProxyState>, reloader: &Reloader) -> AdminResponse {
    match reloader.reload(state, ReloadTrigger::Api).await {
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
