//! What a preview's phases (`phase/visitor.rs`, `phase/exposed.rs`, `phase/visit.rs`) and the admin API that makes
//! links share: whether a link or session still opens a preview ([`allowed`]), where its dev server is
//! ([`address`]), the dev server reached ([`forward`], live traffic's effect), the session a link opens
//! ([`session_cookie`]) and the page a refused person sees ([`page`]).
//!
//! A request on the preview listener is a person reaching a port of a sandbox, the other way from a sandbox's
//! traffic. Its phases, each refusing with its own reason, and every request audited (kind `preview`, the
//! link's user as `user`):
//!
//! 1. **visitor**: the name `<port>-<sandbox>.<domain>` (else 404 `preview_unknown`); then the link or the
//!    session: `/.cordon/preview?t=LINK` opens a link (from the preview's own origin only, checked first); any
//!    other request needs the session cookie (none or a bad one: 401 `preview_login` with a short page);
//! 2. **exposed**: still allowed: made for this preview (403 `preview_other`), the preview not revoked, the
//!    sandbox neither revoked nor expired (403 `preview_revoked`), the same incarnation the link was made for
//!    (403 `preview_other_incarnation`), the port among its policy's `expose` (403 `port_not_exposed`); the
//!    request from the preview's own origin: an `Origin` that is not, or (for a WebSocket or a method other than
//!    GET/HEAD/OPTIONS without `Origin`) a `Sec-Fetch-Site` naming another origin, is refused (403
//!    `preview_cross_origin`, recorded with the person and the sandbox whose session it used); then the
//!    sandbox's own address (its single-address `source_cidrs`), never a metadata address or one of cordon's
//!    listeners (403 `metadata_address` / `self_address`; the private ranges do not apply);
//! 3. **visit**: a link opened sets a host-only session cookie and sends the browser to `/`; any other request
//!    is forwarded to that address at that port, over HTTP/1.1, upgrades (WebSockets) included, without the
//!    session cookie; the dev server's `Set-Cookie` lines naming cordon's cookie or a `Domain` other than the
//!    preview's host are removed from its answer (and listed in the record, `set_cookie_stripped`).
//!
//! SECURITY: a preview reaches only the address the control plane holds for that sandbox, only at a port its
//! policy exposes, and only with a session signed by cordon for that sandbox and port.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::header::{CONNECTION, LOCATION, SET_COOKIE, UPGRADE};
use http::{HeaderValue, Request, Response, StatusCode};

use crate::body::ProxyBody;
use crate::error::ProxyError;
use crate::generation::Generation;
use crate::identity::Sandbox;
use crate::names::SandboxId;
use crate::policy::Policy;
use crate::preview::{Claims, Previews, cookies};
use crate::reason::Reason;
use crate::state::ProxyState;
use tokio_util::task::TaskTracker;

/// A preview's refusal (or failure): its reason, and what the person is told.
pub(crate) fn refusal(code: Reason, message: impl Into<String>) -> ProxyError {
    ProxyError::Preview {
        code,
        message: message.into(),
    }
}

/// Whether `claims` still open preview `(port, id)`: made for it, not revoked, the sandbox alive (`found`, as it
/// is now) and the same incarnation, the port exposed by its policy (`policy`); the sandbox and its source
/// ranges.
pub(crate) fn allowed(
    previews: &Previews,
    claims: &Claims,
    (port, id): (u16, &SandboxId),
    found: Option<(Sandbox, Vec<ipnet::IpNet>)>,
    policy: impl FnOnce(&Sandbox) -> Option<Arc<Policy>>,
) -> Result<(Sandbox, Vec<ipnet::IpNet>), ProxyError> {
    if claims.sbx != *id || claims.port != port {
        return Err(refusal(
            Reason::PreviewOther,
            "this session or link is for another preview",
        ));
    }
    let revoked = || refusal(Reason::PreviewRevoked, "this preview has been closed");
    if previews.is_revoked(&claims.pid) {
        return Err(revoked());
    }
    let (sandbox, cidrs) = found.ok_or_else(revoked)?;
    // SECURITY: a link or session opens only the incarnation it was made for: the id revoked (or purged, or
    // removed from the file) and created again, for another user or the same, is another sandbox whose dev
    // server an earlier link's holder must not reach.
    if *sandbox.incarnation() != claims.inc {
        return Err(refusal(
            Reason::PreviewOtherIncarnation,
            format!(
                "this session or link was made for an earlier sandbox named {id:?}, not the one there now; ask for a new link"
            ),
        ));
    }
    if !policy(&sandbox).is_some_and(|p| p.expose.contains(&port)) {
        return Err(refusal(
            Reason::PortNotExposed,
            format!("port {port} is not among the ports the sandbox's policy exposes"),
        ));
    }
    Ok((sandbox, cidrs))
}

/// 403 `preview_cross_origin` unless `req` comes from the preview's own origin (`scheme://name`).
pub(crate) fn same_origin(req: &Request<ProxyBody>, scheme: &str, name: &str) -> Result<(), ProxyError> {
    crate::preview::origin::check(req.method(), req.headers(), scheme, name)
        .map_err(|message| refusal(Reason::PreviewCrossOrigin, message))
}

/// Where the dev server of a sandbox with source ranges `cidrs` is at `port`: its own address (a range of one
/// address), passed by the address guard.
pub(crate) fn address(generation: &Generation, cidrs: &[ipnet::IpNet], port: u16) -> Result<SocketAddr, ProxyError> {
    let address: IpAddr = cidrs
        .iter()
        .find(|n| n.prefix_len() == n.max_prefix_len())
        .map(|n| n.addr())
        .ok_or_else(|| {
            refusal(
                Reason::PreviewNoAddress,
                "the sandbox has no address of its own (a source_cidrs entry of one address)",
            )
        })?;
    let at = SocketAddr::new(address, port);
    generation
        .dialer
        .guard()
        .check_sandbox_addr(at)
        .map_err(|r| refusal(r.reason(), format!("the sandbox's address is refused: {r}")))?;
    Ok(at)
}

/// Sandbox `id` as it is now, if it lives (declared in the file, or created and neither revoked nor expired),
/// and its source ranges.
pub(crate) fn live(
    state: &ProxyState,
    generation: &Generation,
    id: &SandboxId,
) -> Option<(Sandbox, Vec<ipnet::IpNet>)> {
    match generation.identities.get(id) {
        Some(s) => {
            let spec = generation.config.sandboxes.iter().find(|s| s.id == *id);
            Some(((*s).clone(), spec.map(|s| s.source_cidrs.clone()).unwrap_or_default()))
        }
        None => {
            let record = state.control.get(id)?;
            let now = i64::try_from(now()).unwrap_or(i64::MAX);
            if record.revoked.is_some() || record.expires <= now {
                return None;
            }
            Some((record.incarnation(), record.source_cidrs.clone()))
        }
    }
}

/// Send `req` to the dev server at `to` (its response head within `timeout`), passing an upgrade (WebSocket)
/// through when the server agrees; the relay and the connection run on `tasks`.
pub(crate) async fn forward(
    tasks: &TaskTracker,
    timeout: Duration,
    mut req: Request<ProxyBody>,
    to: SocketAddr,
) -> Result<Response<ProxyBody>, ProxyError> {
    let wants_upgrade = req.headers().contains_key(UPGRADE);
    let client_upgrade = wants_upgrade.then(|| hyper::upgrade::on(&mut req));
    if !wants_upgrade {
        req.headers_mut().remove(CONNECTION);
    }
    let sent = tokio::time::timeout(timeout, async {
        let stream = tokio::net::TcpStream::connect(to).await.map_err(|e| e.to_string())?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
        tasks.spawn(conn.with_upgrades());
        sender.send_request(req).await.map_err(|e| e.to_string())
    })
    .await;
    let mut resp = match sent {
        Ok(Ok(resp)) => resp,
        Ok(Err(e)) => {
            return Err(refusal(
                Reason::PreviewUnreachable,
                format!("the dev server did not answer: {e}"),
            ));
        }
        Err(_) => {
            return Err(refusal(Reason::PreviewTimeout, "the dev server did not answer in time"));
        }
    };
    if resp.status() == StatusCode::SWITCHING_PROTOCOLS
        && let Some(client_upgrade) = client_upgrade
    {
        let server_upgrade = hyper::upgrade::on(&mut resp);
        tasks.spawn(async move {
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

/// `/.cordon/preview?t=LINK` opened: a session made from the link's claims, in a cookie, and the browser sent
/// to `/`.
pub(crate) fn session_cookie(previews: &Previews, link: &Claims) -> Result<Response<ProxyBody>, ProxyError> {
    let ttl = previews.session_ttl();
    let session = Claims::new(
        link.pid.clone(),
        (link.sbx.clone(), link.inc.clone()),
        link.port,
        link.user.clone(),
        now() + ttl.as_secs(),
    );
    let token = previews
        .signer
        .session(&session)
        .map_err(|e| refusal(Reason::PreviewFailed, format!("cannot sign the session: {e}")))?;
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

/// The short page a person's browser shows for a refused preview, with the reason in `x-cordon-reason`.
pub(crate) fn page(err: &ProxyError) -> Response<ProxyBody> {
    let status = err.status();
    let escaped = err
        .public_message()
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
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
    h.insert(
        crate::error::REASON_HEADER,
        HeaderValue::from_static(err.reason().code()),
    );
    h.insert(http::header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// Seconds since the epoch.
fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}
