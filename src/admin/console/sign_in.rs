//! Signing in to the console and out of it: the sign-in page, the OpenID Connect round trip (out to the
//! provider, back to `/console/callback`), a token typed into a form, and signing out. Every sign-in, refused
//! or not, is a `kind: admin` record (`sign_in`, `sign_out`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use cookie::SameSite;
use http::header::{LOCATION, SET_COOKIE};
use http::{HeaderValue, Request, Response, StatusCode};
use hyper::body::Incoming;
use sha2::{Digest, Sha256};

use super::answer::refuse_csrf;
use super::answer::{html, read_form, see_other};
use super::pages;
use super::sessions::{Proof, cookie, path_of, random, same};
use super::state::{Certs, Console, Me};
use crate::admin::response::Body;
use crate::audit::AdminAction;
use crate::principal::Principal;
use crate::reason::Reason;
use crate::state::ProxyState;

/// How long the sign-in page's form (and the round trip through the provider) may take.
const FORM_LIFE: Duration = Duration::from_secs(600);

/// Why a token's principal is refused over a connection without a client certificate.
pub(super) const NEEDS_CERT: &str = "admin tokens need a client certificate here as on /v1 (admin.tls.client_ca): \
                                     sign in over a connection that presents one, on the admin listener, or sign \
                                     in with the identity provider";

/// The sign-in page, with `problem` said and answered with `status`. The token form carries a fresh value that
/// a `SameSite=Strict` cookie carries too (a page elsewhere cannot post a token into this browser's console).
/// Nobody is signed in here: a session's cookie is sent only to its own place.
pub(super) fn page(console: &Console, problem: Option<&str>, status: StatusCode) -> Response<Body> {
    let Ok(form) = random() else {
        return html(
            StatusCode::INTERNAL_SERVER_ERROR,
            &pages::problem(None, "Unavailable", "the system random generator failed"),
        );
    };
    let provider = console.oidc.as_ref().map(|p| (p.issuer(), p.ready()));
    let mut resp = html(status, &pages::sign_in(provider, &form, problem));
    let cookie = console
        .names
        .set(console.names.form, &form, SameSite::Strict, FORM_LIFE);
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        resp.headers_mut().append(SET_COOKIE, v);
    }
    resp
}

/// Send the browser to the provider, remembering the sign-in (bound to this browser by a cookie).
pub(super) fn start_oidc(console: &Console) -> Response<Body> {
    let Some(provider) = &console.oidc else {
        return page(
            console,
            Some("this console has no identity provider (console.oidc); sign in with a token"),
            StatusCode::NOT_FOUND,
        );
    };
    let (url, flow) = match provider.begin() {
        Ok(x) => x,
        Err(e) => {
            return page(console, Some(&e.to_string()), StatusCode::SERVICE_UNAVAILABLE);
        }
    };
    let Ok(browser) = random() else {
        return page(
            console,
            Some("the system random generator failed"),
            StatusCode::INTERNAL_SERVER_ERROR,
        );
    };
    console.sessions.started(flow, &browser);
    let mut resp = see_other("/console/login", None);
    let h = resp.headers_mut();
    match HeaderValue::from_str(&url) {
        Ok(v) => h.insert(LOCATION, v),
        Err(_) => {
            return page(
                console,
                Some("the provider's URL is not usable"),
                StatusCode::BAD_GATEWAY,
            );
        }
    };
    // Lax, not Strict: the browser comes back from the provider's site, and must bring it.
    if let Ok(v) = HeaderValue::from_str(
        &console
            .names
            .set(console.names.flow, &browser, SameSite::Lax, FORM_LIFE),
    ) {
        h.append(SET_COOKIE, v);
    }
    resp
}

/// Back from the provider: check the sign-in is this browser's, exchange the code, verify the ID token, and open
/// a session for the person it names.
pub(super) async fn callback(
    console: &Console,
    state: &ProxyState,
    req: &Request<Incoming>,
    client: SocketAddr,
) -> Response<Body> {
    let Some(provider) = &console.oidc else {
        return page(
            console,
            Some("this console has no identity provider"),
            StatusCode::NOT_FOUND,
        );
    };
    let query: Vec<(String, String)> = form_urlencoded::parse(req.uri().query().unwrap_or_default().as_bytes())
        .into_owned()
        .collect();
    let field = |name: &str| query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let refused = |why: String| {
        tracing::warn!(%client, issuer = provider.issuer(), "console: sign-in refused: {why}");
        record(
            state,
            None,
            client,
            "sign_in",
            Some(Reason::AdminUnauthorized),
            Some(why.clone()),
        );
        page(
            console,
            Some(&format!("Sign-in refused: {why}")),
            StatusCode::UNAUTHORIZED,
        )
    };
    if let Some(error) = field("error") {
        return refused(format!(
            "the identity provider said {error}: {}",
            field("error_description").unwrap_or_default()
        ));
    }
    let (Some(code), Some(state_param)) = (field("code"), field("state")) else {
        return refused("the provider's answer has no code or no state".into());
    };
    let flow = match console
        .sessions
        .finish(state_param, cookie(req.headers(), console.names.flow).as_deref())
    {
        Ok(flow) => flow,
        Err(why) => return refused(why.into()),
    };
    let generation = state.current();
    let roles = generation
        .config
        .console
        .as_ref()
        .and_then(|c| c.oidc.as_ref())
        .map(|o| &o.roles);
    let Some(roles) = roles else {
        return refused("the configuration in force has no console.oidc".into());
    };
    let person = match provider.finish(&flow, code, roles).await {
        Ok(p) => p,
        Err(e) => return refused(e.to_string()),
    };
    let principal = person.principal();
    let Ok((value, session)) = console
        .sessions
        .open(principal.clone(), Proof::Person(person.claimed.clone()))
    else {
        return refused("cordon could not open a session (the system random generator failed)".into());
    };
    tracing::info!(%client, principal = %principal.name, roles = %principal.roles.names(), "console: signed in through OpenID Connect");
    record(
        state,
        Some(&principal),
        client,
        "sign_in",
        None,
        Some(format!("sub {:?} of {}", person.subject, provider.issuer())),
    );
    let base = format!("{}/", path_of(&session.place));
    let mut resp = html(StatusCode::OK, &pages::signed_in(&principal.name, &base));
    let names = console.names;
    for c in [
        names.session(&value, &session.place, console.sessions.ttl),
        names.set(names.flow, "", SameSite::Lax, Duration::ZERO),
    ] {
        if let Ok(v) = HeaderValue::from_str(&c) {
            resp.headers_mut().append(SET_COOKIE, v);
        }
    }
    resp
}

/// A token typed into the sign-in form: a session for the token's principal.
pub(super) async fn token(
    console: &Console,
    state: &Arc<ProxyState>,
    req: Request<Incoming>,
    client: SocketAddr,
    certs: Certs,
) -> Response<Body> {
    let headers = req.headers().clone();
    let origin_ok = console.same_origin(&headers);
    let form = match read_form(req).await {
        Ok(f) => f,
        Err(resp) => return resp,
    };
    let posted = form.get("csrf").map(String::as_str).unwrap_or_default();
    let kept = cookie(&headers, console.names.form).unwrap_or_default();
    if !origin_ok || !same(posted, &kept) {
        return refuse_csrf(state, None, client, "sign_in", None);
    }
    // SECURITY: a token that needs a client certificate on /v1 needs one to sign in to the console too.
    if certs.lacking() {
        record(
            state,
            None,
            client,
            "sign_in",
            Some(Reason::AdminUnauthorized),
            Some(NEEDS_CERT.into()),
        );
        return page(console, Some(NEEDS_CERT), StatusCode::UNAUTHORIZED);
    }
    let token = form.get("token").map(|t| t.trim()).unwrap_or_default();
    let hash: [u8; 32] = Sha256::digest(token.as_bytes()).into();
    let Some(principal) = state.current().admin_principal_hashed(&hash) else {
        let why = "the token is not one of control.admin_token / control.admin_tokens";
        record(
            state,
            None,
            client,
            "sign_in",
            Some(Reason::AdminUnauthorized),
            Some(why.into()),
        );
        return page(console, Some(why), StatusCode::UNAUTHORIZED);
    };
    let Ok((value, session)) = console.sessions.open(principal.clone(), Proof::Token(hash)) else {
        return page(
            console,
            Some("the system random generator failed"),
            StatusCode::INTERNAL_SERVER_ERROR,
        );
    };
    record(
        state,
        Some(&principal),
        client,
        "sign_in",
        None,
        Some("with an admin token".into()),
    );
    let cookie = console.names.session(&value, &session.place, console.sessions.ttl);
    see_other(&format!("{}/", path_of(&session.place)), Some(cookie))
}

/// End `me`'s session.
pub(super) fn sign_out(console: &Console, state: &ProxyState, client: SocketAddr, me: &Me) -> Response<Body> {
    console.sessions.close(&me.cookie);
    record(state, Some(&me.principal), client, "sign_out", None, None);
    let gone = console.names.session("", &me.session.place, Duration::ZERO);
    see_other("/console/login", Some(gone))
}

/// Record a console action that is not an admin API route (signing in and out).
fn record(
    state: &ProxyState,
    principal: Option<&Principal>,
    client: SocketAddr,
    action: &str,
    refused: Option<Reason>,
    detail: Option<String>,
) {
    crate::audit::admin(
        &state.audit,
        AdminAction {
            principal,
            client,
            action,
            status: match refused {
                Some(_) => 401,
                None => 303,
            },
            refused,
            sandbox: None,
            detail,
            covered: None,
        },
    );
}
