//! The console: the approval inbox in the browser, for the people who decide held requests and watch
//! sandboxes. Server-rendered pages ([`pages`]) with one small script that swaps a list in when the server's
//! event stream ([`events`]) says it changed; every page works without it.
//!
//! People sign in through the configured OpenID Connect provider (code flow with PKCE, [`crate::oidc`]) or with
//! an admin token; either way the session ([`sessions`]) carries a [`Principal`], and what the console does for
//! them goes through the same handlers, role checks and `kind: admin` records as the admin API: the approver a
//! record names is whoever signed in, never a field of a form.
//!
//! The session cookie is `HttpOnly` and `SameSite=Strict` (`__Secure-` and `Secure` over TLS), and sent only
//! under the session's random place (`/console/s/PLACE/`, where its pages are), so that no other port of the
//! console's host receives it; every form carries the session's CSRF token and must say it comes from the
//! console's exact origin; the pages forbid scripts, styles and frames from anywhere else (CSP) and no token
//! ever travels in a URL. With `admin.tls.client_ca`, a token's session needs a client certificate as `/v1` does.

mod answer;
mod events;
mod pages;
mod sessions;
mod sign_in;
mod state;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use maud::Markup;
use serde_json::{Value, json};

use super::access::{self, Caller};
use super::response::Body;
use super::{acted, approvals, requests, sandboxes};
use crate::names::SandboxId;
use crate::principal::Needs;
use crate::reason::Reason;
use crate::state::ProxyState;
use answer::{after, asset, forbidden_page, fragment, html, not_found, read_form, refuse_csrf, secured, see_other};
use sessions::{Proof, same};
use state::Me;
pub(crate) use state::{Certs, Console};

/// The console's script and style, served from the binary.
const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/style.css");

/// Answer one request under `/console`.
pub(super) async fn handle(
    console: &Arc<Console>,
    state: &Arc<ProxyState>,
    req: Request<Incoming>,
    client: SocketAddr,
    certs: Certs,
) -> Response<Body> {
    let path = req.uri().path().to_owned();
    let rest = path.strip_prefix("/console").unwrap_or(&path).to_owned();
    let method = req.method().clone();
    let resp = match (&method, rest.as_str()) {
        (&Method::GET, "/static/app.js") => asset(SCRIPT, "text/javascript; charset=utf-8"),
        (&Method::GET, "/static/style.css") => asset(STYLE, "text/css; charset=utf-8"),
        (&Method::GET, "/login") => sign_in::page(console, None, StatusCode::OK),
        (&Method::GET, "/login/oidc") => sign_in::start_oidc(console),
        (&Method::GET, "/callback") => sign_in::callback(console, state, &req, client).await,
        (&Method::POST, "/login/token") => sign_in::token(console, state, req, client, certs).await,
        _ => match rest.strip_prefix("/s/").and_then(|r| r.split_once('/')) {
            Some((place, inner)) => {
                let (place, inner) = (place.to_owned(), format!("/{inner}"));
                session(console, state, req, client, certs, &place, &inner).await
            }
            // The console's pages are a session's (under its place): anything else is the sign-in page's.
            None if method == Method::GET => see_other("/console/login", None),
            None => html(
                StatusCode::NOT_FOUND,
                &pages::problem(None, "Not found", "The console has no such page."),
            ),
        },
    };
    secured(resp)
}

/// A request under a session's place (`/console/s/{place}{rest}`).
async fn session(
    console: &Arc<Console>,
    state: &Arc<ProxyState>,
    req: Request<Incoming>,
    client: SocketAddr,
    certs: Certs,
    place: &str,
    rest: &str,
) -> Response<Body> {
    let method = req.method().clone();
    let Some(me) = console.me(state, req.headers(), place) else {
        if method == Method::GET && !rest.starts_with("/fragments/") && rest != "/events" {
            return see_other("/console/login", None);
        }
        if method != Method::GET {
            let why = "the console form came without a live session (signed out, expired, or posted from \
                       another site or port, which the session cookie is never sent to)";
            access::record_refusal(state, None, client, action_of(rest), Reason::AdminUnauthorized, why);
        }
        return html(
            StatusCode::UNAUTHORIZED,
            &pages::problem(None, "Signed out", "Sign in again at /console/login."),
        );
    };
    // SECURITY: with admin.tls.client_ca, a token's principal needs a client certificate in the console too.
    if matches!(me.session.proof, Proof::Token(_)) && certs.lacking() {
        let why = sign_in::NEEDS_CERT;
        access::record_refusal(
            state,
            Some(&me.principal),
            client,
            action_of(rest),
            Reason::AdminUnauthorized,
            why,
        );
        return html(
            StatusCode::UNAUTHORIZED,
            &pages::problem(None, "Certificate required", why),
        );
    }
    signed_in(console, state, req, client, &me, rest).await
}

/// The routes that need a session.
async fn signed_in(
    console: &Arc<Console>,
    state: &Arc<ProxyState>,
    req: Request<Incoming>,
    client: SocketAddr,
    me: &Me,
    rest: &str,
) -> Response<Body> {
    let method = req.method().clone();
    let note = note(req.uri().query());
    let segments: Vec<&str> = rest.trim_start_matches('/').split('/').collect();
    let caller = Caller {
        principal: me.principal.clone(),
        client,
    };
    if method == Method::GET {
        return match segments.as_slice() {
            [""] => {
                let (held, decisions) = (held(state, me).await, pages::decisions(&state.recent.decisions()));
                let asked = asked(state, me);
                html(
                    StatusCode::OK,
                    &pages::inbox(&me.viewer(), note, held, asked, decisions),
                )
            }
            ["sandboxes"] => html(
                StatusCode::OK,
                &pages::sandboxes(&me.viewer(), note, sandbox_list(state, me)),
            ),
            ["fragments", "inbox"] => fragment(held(state, me).await),
            ["fragments", "decisions"] => fragment(pages::decisions(&state.recent.decisions())),
            ["fragments", "sandboxes"] => fragment(sandbox_list(state, me)),
            ["events"] => events(console, state, me),
            _ => not_found(me),
        };
    }
    if method != Method::POST {
        return html(
            StatusCode::METHOD_NOT_ALLOWED,
            &pages::problem(Some(&me.viewer()), "Not allowed", "The console takes GET and POST."),
        );
    }
    let origin_ok = console.same_origin(req.headers());
    let form = match read_form(req).await {
        Ok(f) => f,
        Err(resp) => return resp,
    };
    let action = action_of(rest);
    if action == "read" {
        return not_found(me);
    }
    // SECURITY: a form counts only with its session's CSRF token, from the console's own origin; the session
    // cookie is SameSite=Strict besides, so a page elsewhere cannot post with it.
    let token = form.get("csrf").map(String::as_str).unwrap_or_default();
    if !origin_ok || !same(token, &me.session.csrf) {
        return refuse_csrf(state, Some(&me.principal), client, action, Some(&me.viewer()));
    }
    match segments.as_slice() {
        ["logout"] => sign_in::sign_out(console, state, client, me),
        ["approvals", id] => decide(state, &caller, me, id, &form).await,
        ["access", id] => {
            // SECURITY: the role is checked before anything is decided.
            if let Some(why) = access::forbidden(state, &caller, Needs::Decide, action) {
                return forbidden_page(me, &why);
            }
            let mut resp = match form.get("act").map(String::as_str) {
                Some("grant") => requests::decide(state, &caller, id, &json!({"decision": "grant"})),
                Some("deny") => requests::decide(state, &caller, id, &json!({"decision": "deny"})),
                Some("revoke") => requests::revoke(state, &caller, id),
                _ => {
                    return html(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        &pages::problem(
                            Some(&me.viewer()),
                            "Not a decision",
                            "act must be grant, deny or revoke",
                        ),
                    );
                }
            };
            acted::record(state, &caller, action, None, &mut resp);
            if resp.status() == StatusCode::NOT_FOUND || resp.status() == StatusCode::CONFLICT {
                return see_other(&format!("{}?note=gone", me.base), None);
            }
            after(me, resp, "?note=decided").await
        }
        ["sandboxes", id, "revoke"] => {
            if let Some(why) = access::forbidden(state, &caller, Needs::Sandboxes, action) {
                return forbidden_page(me, &why);
            }
            let mut resp = match sandboxes::path_id(id) {
                Ok(sandbox) => sandboxes::revoke(state, &sandbox).await,
                Err(e) => sandboxes::failed(e),
            };
            acted::record(state, &caller, action, Some(id), &mut resp);
            console.touched();
            after(me, resp, "sandboxes?note=revoked").await
        }
        _ => not_found(me),
    }
}

/// The held requests as `me` sees them: with decision buttons when they may decide.
async fn held(state: &ProxyState, me: &Me) -> Markup {
    let viewer = me.viewer();
    let decide = me.principal.may(Needs::Decide).then_some(&viewer);
    match approvals::pending(state).await {
        Ok(list) => pages::held(&list, decide, None),
        Err(e) => pages::held(&[], None, Some(&format!("the shared store does not answer: {e}"))),
    }
}

/// The access requests as `me` sees them: with grant, deny and revoke buttons when they may decide.
fn asked(state: &ProxyState, me: &Me) -> Markup {
    let viewer = me.viewer();
    let decide = me.principal.may(Needs::Decide).then_some(&viewer);
    let list: Vec<Value> = state
        .control
        .access
        .list(crate::control::now())
        .iter()
        .map(|r| serde_json::to_value(r).unwrap_or_default())
        .collect();
    pages::asked(&list, decide)
}

/// The sandboxes as `me` sees them: with revoke buttons when they may revoke.
fn sandbox_list(state: &ProxyState, me: &Me) -> Markup {
    let viewer = me.viewer();
    let revoke = me.principal.may(Needs::Sandboxes).then_some(&viewer);
    let list = sandboxes::all(state);
    pages::sandbox_list(&list, revoke, &|id| {
        SandboxId::parse(id)
            .map(|id| state.recent.refusals(&id))
            .unwrap_or_default()
    })
}

/// The event stream of an open page, until its session ends or loses its roles.
fn events(console: &Arc<Console>, state: &Arc<ProxyState>, me: &Me) -> Response<Body> {
    // SECURITY: one principal's pages hold at most MOST_STREAMS_EACH streams, so they cannot starve others'.
    let held = match console.streams.take(&me.principal.name) {
        Ok(held) => held,
        Err(full) => {
            let why = match full {
                events::Full::Yours => format!(
                    "You have {} console pages with live lists open already; this one updates on reload.",
                    events::MOST_STREAMS_EACH
                ),
                events::Full::Everyone => "Too many console pages are open; the lists update on reload.".to_owned(),
            };
            return html(StatusCode::TOO_MANY_REQUESTS, &pages::problem(None, "Busy", &why));
        }
    };
    // Weak: an open stream keeps neither the console nor the state alive.
    let (console_of, state_of, cookie) = (Arc::downgrade(console), Arc::downgrade(state), me.cookie.clone());
    let body = events::stream(events::StreamWatch {
        approvals: state.approvals.changes(),
        sandboxes: console.sandboxes.subscribe(),
        ends: me.session.ends,
        shared: state.approvals.shared().is_some(),
        alive: Box::new(move || {
            let (console, state) = (console_of.upgrade()?, state_of.upgrade()?);
            console.principal_of(&state, &cookie).map(|p| p.roles)
        }),
        roles: me.principal.roles,
        _held: held,
    });
    let mut resp = Response::new(body);
    let h = resp.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// Decide the held request `id` as the form's `act` says, for `caller`; `always` asks for a confirmation first.
async fn decide(
    state: &ProxyState,
    caller: &Caller,
    me: &Me,
    id: &str,
    form: &HashMap<String, String>,
) -> Response<Body> {
    let action = "approval_decided";
    let (verdict, scope) = match form.get("act").map(String::as_str) {
        Some("allow_once") => ("allow", "once"),
        Some("allow_exact") => ("allow", "exact"),
        Some("allow_always") => ("allow", "always"),
        Some("deny") => ("deny", "once"),
        _ => {
            return html(
                StatusCode::UNPROCESSABLE_ENTITY,
                &pages::problem(
                    Some(&me.viewer()),
                    "Not a decision",
                    "act must be allow_once, allow_exact, allow_always or deny",
                ),
            );
        }
    };
    if let Some(why) = access::forbidden(state, caller, Needs::Decide, action) {
        return forbidden_page(me, &why);
    }
    if scope == "always" && form.get("confirm").map(String::as_str) != Some("yes") {
        let list = approvals::pending(state).await.unwrap_or_default();
        return match list.iter().find(|p| p.get("id").and_then(Value::as_str) == Some(id)) {
            Some(p) => html(StatusCode::OK, &pages::confirm_always(&me.viewer(), id, p)),
            None => see_other(&format!("{}?note=gone", me.base), None),
        };
    }
    let mut resp = approvals::decide(state, caller, id, &json!({"decision": verdict, "scope": scope})).await;
    acted::record(state, caller, action, None, &mut resp);
    if resp.status() == StatusCode::NOT_FOUND {
        return see_other(&format!("{}?note=gone", me.base), None);
    }
    after(me, resp, "?note=decided").await
}

/// The action a console form at `rest` (the path after `/console`) does, as records name it (`read`: none).
fn action_of(rest: &str) -> &'static str {
    match rest.trim_start_matches('/').split('/').collect::<Vec<_>>().as_slice() {
        ["logout"] => "sign_out",
        ["approvals", _] => "approval_decided",
        ["access", _] => "access_decided",
        ["sandboxes", _, "revoke"] => "sandbox_revoked",
        _ => "read",
    }
}

/// The sentence a `?note=` code stands for.
fn note(query: Option<&str>) -> Option<&'static str> {
    let code = form_urlencoded::parse(query?.as_bytes()).find(|(k, _)| k == "note")?.1;
    Some(match code.as_ref() {
        "decided" => "Decided. The request goes on (or is refused) at once.",
        "gone" => "That request is no longer waiting: someone else decided it, it timed out, or its sandbox went away.",
        "revoked" => "Revoked: its connections close within a second.",
        _ => return None,
    })
}
