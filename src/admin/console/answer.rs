//! How the console answers: HTML with the headers every page carries, redirects, its two files, and the forms
//! it reads.

use std::collections::HashMap;
use std::net::SocketAddr;

use bytes::Bytes;
use http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, LOCATION, REFERRER_POLICY, SET_COOKIE,
    X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use http::{HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use maud::Markup;

use super::pages::{self, Viewer};
use super::state::Me;
use crate::admin::access;
use crate::admin::response::{AdminResponse, Body};
use crate::principal::Principal;
use crate::reason::Reason;
use crate::state::ProxyState;

/// The largest form read.
pub(super) const MOST_FORM: usize = 16 * 1024;
/// What the pages may load: their own script and style, nothing inline, nothing from elsewhere, no frames.
pub(super) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; \
                   form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

fn body(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).map_err(|never| match never {}).boxed_unsync()
}

/// A page or fragment with `status`.
pub(super) fn html(status: StatusCode, markup: &Markup) -> Response<Body> {
    let mut resp = Response::new(body(markup.0.clone()));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    resp
}

/// A fragment a page swaps in.
pub(super) fn fragment(markup: Markup) -> Response<Body> {
    html(StatusCode::OK, &markup)
}

/// One of the console's own files.
pub(super) fn asset(text: &'static str, kind: &'static str) -> Response<Body> {
    let mut resp = Response::new(body(text));
    resp.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(kind));
    resp
}

/// 303 to `to` (a path of the console), setting `cookie` if given.
pub(super) fn see_other(to: &str, cookie: Option<String>) -> Response<Body> {
    let mut resp = Response::new(body(Bytes::new()));
    *resp.status_mut() = StatusCode::SEE_OTHER;
    let to = HeaderValue::from_str(to).unwrap_or(HeaderValue::from_static("/console/login"));
    resp.headers_mut().insert(LOCATION, to);
    if let Some(v) = cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        resp.headers_mut().append(SET_COOKIE, v);
    }
    resp
}

/// 404 for a path the console does not have.
pub(super) fn not_found(me: &Me) -> Response<Body> {
    html(
        StatusCode::NOT_FOUND,
        &pages::problem(Some(&me.viewer()), "Not found", "The console has no such page."),
    )
}

/// What follows an admin handler's answer in the browser: on success, 303 to `to` (below the session's place);
/// else the handler's message on a page with its status.
pub(super) async fn after(me: &Me, resp: AdminResponse, to: &str) -> Response<Body> {
    if resp.status().is_success() {
        return see_other(&format!("{}{to}", me.base), None);
    }
    let status = resp.status();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let said: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    let message = said["error"]["message"].as_str().unwrap_or("it failed");
    html(status, &pages::problem(Some(&me.viewer()), "Not done", message))
}

/// Every console answer carries these: no caching, no framing, no sniffing, no loading by other origins, a
/// referrer only to the console itself (a session's place and a callback's code stay here; `no-referrer` would
/// make the browser send `Origin: null` on the console's own forms), and the CSP.
pub(super) fn secured(mut resp: Response<Body>) -> Response<Body> {
    let h = resp.headers_mut();
    h.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    h.entry(CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
    h.insert("cross-origin-opener-policy", HeaderValue::from_static("same-origin"));
    // No page of another origin may load a console answer, even as an image or a script (whose bytes a
    // side channel could read).
    h.insert("cross-origin-resource-policy", HeaderValue::from_static("same-origin"));
    resp
}

/// The fields of an `application/x-www-form-urlencoded` body of at most [`MOST_FORM`] bytes (the first of a
/// name that repeats).
#[expect(
    clippy::result_large_err,
    reason = "the error is the answer itself, built once per refused form"
)]
pub(super) async fn read_form(req: http::Request<Incoming>) -> Result<HashMap<String, String>, Response<Body>> {
    fn refuse(status: StatusCode, why: &str) -> Result<HashMap<String, String>, Response<Body>> {
        Err(html(status, &pages::problem(None, "Not a form", why)))
    }
    let kind = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !kind.starts_with("application/x-www-form-urlencoded") {
        return refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "the console reads forms (application/x-www-form-urlencoded)",
        );
    }
    let Ok(bytes) = Limited::new(req.into_body(), MOST_FORM)
        .collect()
        .await
        .map(|b| b.to_bytes())
    else {
        return refuse(StatusCode::PAYLOAD_TOO_LARGE, "the form is too large, or was cut off");
    };
    let mut out = HashMap::new();
    for (k, v) in form_urlencoded::parse(&bytes) {
        out.entry(k.into_owned()).or_insert_with(|| v.into_owned());
    }
    Ok(out)
}

/// The 403 page for what `me` may not do.
pub(super) fn forbidden_page(me: &Me, why: &str) -> Response<Body> {
    html(
        StatusCode::FORBIDDEN,
        &pages::problem(Some(&me.viewer()), "Not allowed", why),
    )
}

/// Refuse a form without its CSRF token or from another origin (recorded).
pub(super) fn refuse_csrf(
    state: &ProxyState,
    principal: Option<&Principal>,
    client: SocketAddr,
    action: &str,
    viewer: Option<&Viewer<'_>>,
) -> Response<Body> {
    let why = "the form did not come from this console (its CSRF token is missing or wrong, or it was posted from \
               another origin): nothing was done";
    access::record_refusal(state, principal, client, action, Reason::AdminCsrf, why);
    html(StatusCode::FORBIDDEN, &pages::problem(viewer, "Refused", why))
}
