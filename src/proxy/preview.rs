//! A request on the preview listener: a person reaching a port of a sandbox. The steps, each refusing with
//! its own reason and every request audited (kind `preview`, the link's user as `user`):
//!
//! 1. the name: `<port>-<sandbox>.<domain>` (else 404 `preview_unknown`);
//! 2. the link or the session: `/.cordon/preview?t=LINK` sets a host-only session cookie and sends the
//!    browser to `/`; any other request needs that cookie (none or a bad one: 401 `preview_login` with a short
//!    page; one made for another sandbox or port: 403 `preview_other`);
//! 3. still allowed: the preview not revoked, the sandbox neither revoked nor expired (403 `preview_revoked`),
//!    the sandbox the same incarnation the link was made for (403 `preview_other_incarnation`),
//!    the port among its policy's `expose` (403 `port_not_exposed`);
//! 4. the sandbox's own address (its single-address `source_cidrs`) is never a metadata address or one of
//!    cordon's listeners (403 `metadata_address` / `self_address`; the private ranges do not apply);
//! 5. the request comes from the preview's own origin: an `Origin` that is not, or (for a WebSocket or a
//!    method other than GET/HEAD/OPTIONS without `Origin`) a `Sec-Fetch-Site` naming another origin, is
//!    refused (403 `preview_cross_origin`; also before a link is opened);
//! 6. forwarded to that address at that port, over HTTP/1.1, upgrades (WebSockets) included, without the
//!    session cookie; the dev server's `Set-Cookie` lines naming cordon's cookie or a `Domain` other than the
//!    preview's host are removed from its answer (and listed in the record, `set_cookie_stripped`).
//!
//! SECURITY: a preview reaches only the address the control plane holds for that sandbox, only at a port its
//! policy exposes, and only with a session signed by cordon for that sandbox and port.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use http::header::{CONNECTION, HOST, LOCATION, SET_COOKIE, UPGRADE};
use http::{HeaderValue, Request, Response, StatusCode};
use hyper::body::Incoming;

use crate::audit::{Kind, Pending};
use crate::body::ProxyBody;
use crate::error::Side;
use crate::generation::Generation;
use crate::identity::Sandbox;
use crate::preview::{Claims, OPEN_PATH, Previews, cookies, host, origin};
use crate::reason::Reason;
use crate::state::ProxyState;

/// Why a preview request is not forwarded (or a link not made): status, reason code, what the person is told.
pub(crate) struct PreviewRefusal(pub(crate) StatusCode, pub(crate) Reason, pub(crate) String);

impl PreviewRefusal {
    /// Whose it is: the person's request when refused (4xx), the dev server when it did not answer, and cordon's
    /// own otherwise (a session it could not sign, a sandbox its configuration gives no address of its own).
    fn side(&self) -> Side {
        match self {
            PreviewRefusal(_, Reason::PreviewUnreachable, _) => Side::Upstream,
            PreviewRefusal(status, ..) if status.is_client_error() => Side::Downstream,
            PreviewRefusal(..) => Side::Internal,
        }
    }
}

/// Serve one request that reached the preview listener.
pub(crate) async fn serve(
    state: &Arc<ProxyState>,
    client: SocketAddr,
    mut req: Request<Incoming>,
) -> Response<ProxyBody> {
    let mut pending = Pending::start(state.audit.clone(), client, Kind::Preview);
    pending.method(Some(req.method().as_str()));
    pending.path(req.uri().path());
    let outcome = async {
        let previews = state
            .previews
            .clone()
            .ok_or_else(|| PreviewRefusal(StatusCode::NOT_FOUND, Reason::PreviewUnknown, "previews are off".into()))?;
        let name = req
            .headers()
            .get(HOST)
            .and_then(|h| h.to_str().ok())
            .or(req.uri().host())
            .unwrap_or_default()
            .to_string();
        let (port, id) = host::parse(&name, &previews.config.domain).ok_or_else(|| {
            PreviewRefusal(StatusCode::NOT_FOUND,
                Reason::PreviewUnknown,
                format!("{name:?} is not a preview's name"),
            )
        })?;
        let own = format!("{port}-{id}.{}", previews.config.domain);
        pending.host(&own);
        let generation = state.current();
        let same_origin = || origin::check(req.method(), req.headers(), previews.scheme, &name).map_err(cross_origin);
        if req.uri().path() == OPEN_PATH {
            same_origin()?;
            return open(state, &generation, &previews, &mut pending, &req, (port, &id));
        }
        let claims = session(&previews, &req, (port, &id))?;
        let (sandbox, address) = allowed(state, &generation, &previews, &claims, (port, &id))?;
        pending.identity(&sandbox);
        pending.visitor(&claims.user);
        same_origin()?;
        cookies::strip_request(req.headers_mut());
        let mut resp = forward(state, &generation, req, SocketAddr::new(address, port)).await?;
        let stripped = cookies::strip_response(resp.headers_mut(), &own);
        if !stripped.is_empty() {
            tracing::warn!(sandbox = %id, host = %own, cookies = ?stripped, "a dev server's Set-Cookie removed: it names cordon's cookie or another domain");
            pending.set_cookie_stripped(stripped);
        }
        Ok(resp)
    }
    .await;
    match outcome {
        Ok(resp) => {
            pending.allowed(None, None);
            pending.status(resp.status().as_u16());
            pending.finish();
            resp
        }
        Err(refusal) => {
            let side = refusal.side();
            let PreviewRefusal(status, code, message) = refusal;
            // A refusal is a `deny`; a dev server that failed was allowed, and failed.
            let deny = status.is_client_error();
            if !deny {
                pending.allowed(None, None);
            }
            pending.refused(deny, Some(status.as_u16()), code, side, Some(message.clone()));
            pending.finish();
            page(status, code.code(), &message)
        }
    }
}

/// `/.cordon/preview?t=LINK`: the link checked, the session cookie set, the browser sent to `/`.
fn open(
    state: &ProxyState,
    generation: &Generation,
    previews: &Previews,
    pending: &mut Pending,
    req: &Request<Incoming>,
    (port, id): (u16, &str),
) -> Result<Response<ProxyBody>, PreviewRefusal> {
    let token = req
        .uri()
        .query()
        .and_then(|q| form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "t"))
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    let link = previews
        .signer
        .check_link(&token)
        .ok_or_else(|| login("this preview link is not valid, or has expired; ask for a new one"))?;
    let (sandbox, _) = allowed(state, generation, previews, &link, (port, id))?;
    pending.identity(&sandbox);
    pending.visitor(&link.user);
    let ttl = previews.session_ttl();
    let session = Claims::new(
        link.pid.clone(),
        (link.sbx.clone(), link.inc.clone()),
        link.port,
        link.user.clone(),
        now() + ttl.as_secs(),
    );
    let token = previews.signer.session(&session).map_err(|e| {
        PreviewRefusal(
            StatusCode::INTERNAL_SERVER_ERROR,
            Reason::PreviewFailed,
            format!("cannot sign the session: {e}"),
        )
    })?;
    // `__Host-`: Secure, Path=/ and host-only (no Domain), so the browser sends it back to this preview alone
    // and no other host can set one in its place; not readable by the page.
    let cookie = cookie::Cookie::build((cookies::NAME, token))
        .path("/")
        .http_only(true)
        .secure(true)
        .same_site(cookie::SameSite::Lax)
        .max_age(cookie::time::Duration::seconds(
            i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX),
        ))
        .build();
    let mut resp = Response::new(crate::body::empty());
    *resp.status_mut() = StatusCode::SEE_OTHER;
    let h = resp.headers_mut();
    h.insert(LOCATION, HeaderValue::from_static("/"));
    if let Ok(v) = HeaderValue::from_str(&cookie.to_string()) {
        h.insert(SET_COOKIE, v);
    }
    h.insert(http::header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(resp)
}

/// The session a request carries, checked: of the session cookies it has (a browser sends one), the first
/// made for this preview, else the first valid one (which `allowed` then refuses as `preview_other`).
fn session(previews: &Previews, req: &Request<Incoming>, (port, id): (u16, &str)) -> Result<Claims, PreviewRefusal> {
    let tokens = cookies::sessions(req.headers());
    if tokens.is_empty() {
        return Err(login("this preview needs a link: ask for one"));
    }
    let valid: Vec<Claims> = tokens.iter().filter_map(|t| previews.signer.check_session(t)).collect();
    let mine = valid.iter().position(|c| c.sbx == id && c.port == port).unwrap_or(0);
    valid
        .into_iter()
        .nth(mine)
        .ok_or_else(|| login("this preview's session is not valid, or has expired; open a new link"))
}

/// Whether `claims` still open preview `(port, id)`: made for it, not revoked, the sandbox alive, the port
/// exposed; the sandbox and its address.
pub(crate) fn allowed(
    state: &ProxyState,
    generation: &Generation,
    previews: &Previews,
    claims: &Claims,
    (port, id): (u16, &str),
) -> Result<(Sandbox, IpAddr), PreviewRefusal> {
    if claims.sbx != id || claims.port != port {
        return Err(PreviewRefusal(
            StatusCode::FORBIDDEN,
            Reason::PreviewOther,
            "this session or link is for another preview".into(),
        ));
    }
    let revoked = || {
        PreviewRefusal(
            StatusCode::FORBIDDEN,
            Reason::PreviewRevoked,
            "this preview has been closed".into(),
        )
    };
    if previews.is_revoked(&claims.pid) {
        return Err(revoked());
    }
    let (sandbox, cidrs) = live(state, generation, id).ok_or_else(revoked)?;
    // SECURITY: a link or session opens only the incarnation it was made for: the id revoked (or purged, or
    // removed from the file) and created again, for another user or the same, is another sandbox whose dev
    // server an earlier link's holder must not reach.
    if claims.inc != sandbox.incarnation() {
        return Err(PreviewRefusal(
            StatusCode::FORBIDDEN,
            Reason::PreviewOtherIncarnation,
            format!(
                "this session or link was made for an earlier sandbox named {id:?}, not the one there now; ask for a new link"
            ),
        ));
    }
    let exposed = generation
        .policy_for(&sandbox, Some(&state.control))
        .is_some_and(|p| p.expose.contains(&port));
    if !exposed {
        return Err(PreviewRefusal(
            StatusCode::FORBIDDEN,
            Reason::PortNotExposed,
            format!("port {port} is not among the ports the sandbox's policy exposes"),
        ));
    }
    let address = cidrs
        .iter()
        .find(|n| n.prefix_len() == n.max_prefix_len())
        .map(|n| n.addr())
        .ok_or_else(|| {
            PreviewRefusal(
                StatusCode::BAD_GATEWAY,
                Reason::PreviewNoAddress,
                "the sandbox has no address of its own (a source_cidrs entry of one address)".into(),
            )
        })?;
    generation
        .dialer
        .guard()
        .check_sandbox_addr(SocketAddr::new(address, port))
        .map_err(|r| {
            PreviewRefusal(
                StatusCode::FORBIDDEN,
                r.reason(),
                format!("the sandbox's address is refused: {r}"),
            )
        })?;
    Ok((sandbox, address))
}

/// Sandbox `id` as it is now, if it lives (declared in the file, or created and neither revoked nor expired),
/// and its source ranges.
pub(crate) fn live(state: &ProxyState, generation: &Generation, id: &str) -> Option<(Sandbox, Vec<ipnet::IpNet>)> {
    match generation.identities.get(id) {
        Some(s) => {
            let spec = generation.config.sandboxes.iter().find(|s| s.id == id);
            Some(((*s).clone(), spec.map(|s| s.source_cidrs.clone()).unwrap_or_default()))
        }
        None => {
            let record = state.control.get(&crate::names::SandboxId::parse(id).ok()?)?;
            let now = i64::try_from(now()).unwrap_or(i64::MAX);
            if record.revoked.is_some() || record.expires <= now {
                return None;
            }
            Some((record.incarnation(), record.source_cidrs.clone()))
        }
    }
}

/// Send `req` to the dev server at `to`, passing an upgrade (WebSocket) through when the server agrees.
async fn forward(
    state: &ProxyState,
    generation: &Generation,
    mut req: Request<Incoming>,
    to: SocketAddr,
) -> Result<Response<ProxyBody>, PreviewRefusal> {
    let wants_upgrade = req.headers().contains_key(UPGRADE);
    let client_upgrade = wants_upgrade.then(|| hyper::upgrade::on(&mut req));
    if !wants_upgrade {
        req.headers_mut().remove(CONNECTION);
    }
    let timeout = generation.config.timeouts.upstream_headers;
    let sent = tokio::time::timeout(timeout, async {
        let stream = tokio::net::TcpStream::connect(to).await.map_err(|e| e.to_string())?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
        state.tasks.spawn(conn.with_upgrades());
        sender.send_request(req).await.map_err(|e| e.to_string())
    })
    .await;
    let mut resp = match sent {
        Ok(Ok(resp)) => resp,
        Ok(Err(e)) => {
            return Err(PreviewRefusal(
                StatusCode::BAD_GATEWAY,
                Reason::PreviewUnreachable,
                format!("the dev server did not answer: {e}"),
            ));
        }
        Err(_) => {
            return Err(PreviewRefusal(
                StatusCode::GATEWAY_TIMEOUT,
                Reason::PreviewUnreachable,
                "the dev server did not answer in time".into(),
            ));
        }
    };
    if resp.status() == StatusCode::SWITCHING_PROTOCOLS
        && let Some(client_upgrade) = client_upgrade
    {
        let server_upgrade = hyper::upgrade::on(&mut resp);
        state.tasks.spawn(async move {
            if let (Ok(client), Ok(server)) = (client_upgrade.await, server_upgrade.await) {
                let (mut a, mut b) = (
                    hyper_util::rt::TokioIo::new(client),
                    hyper_util::rt::TokioIo::new(server),
                );
                let _ = tokio::io::copy_bidirectional(&mut a, &mut b).await;
            }
        });
    }
    Ok(resp.map(crate::body::boxed))
}

/// 403 `preview_cross_origin`: a request from another origin than the preview's own.
fn cross_origin(message: String) -> PreviewRefusal {
    PreviewRefusal(StatusCode::FORBIDDEN, Reason::PreviewCrossOrigin, message)
}

/// 401 `preview_login`, with what to do.
fn login(message: &str) -> PreviewRefusal {
    PreviewRefusal(StatusCode::UNAUTHORIZED, Reason::PreviewLogin, message.to_string())
}

/// A short page for a person (a browser shows it), with the reason in `x-cordon-reason`.
fn page(status: StatusCode, code: &'static str, message: &str) -> Response<ProxyBody> {
    let escaped = message.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let title = if status == StatusCode::UNAUTHORIZED {
        "This preview needs a link"
    } else {
        "This preview is not available"
    };
    let html = format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title></head>\n<body><h1>{title}</h1>\n\
         <p id=\"cordon-reason\">{escaped}</p>\n<p>Preview links are made with <code>cordon sandbox preview</code>.</p>\
         </body></html>\n"
    );
    let mut resp = Response::new(crate::body::full(html));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(crate::error::REASON_HEADER, HeaderValue::from_static(code));
    h.insert(http::header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}
