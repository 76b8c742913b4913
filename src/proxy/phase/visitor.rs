//! Visitor: who asks for a preview, and which: a person on the preview listener, not a sandbox. The preview's
//! name (`PORT-SANDBOX.DOMAIN`, else 404 `preview_unknown`); then the link being opened
//! (`/.cordon/preview?t=LINK`: from the preview's own origin only, else 403 `preview_cross_origin`, before the
//! link is looked at) or the session cookie (else 401 `preview_login`). Writes `ctx.visit`.

use http::Request;
use http::header::HOST;

use crate::body::ProxyBody;
use crate::error::ProxyError;
use crate::preview::{Claims, OPEN_PATH, Previews, host};
use crate::proxy::ctx::{Ctx, request};
use crate::proxy::effects::Effects;
use crate::proxy::handover::Visit;
use crate::proxy::preview::{refusal, same_origin};
use crate::reason::Reason;

/// Find the preview the request names and the link or session it carries.
pub(crate) async fn run(ctx: &mut Ctx, fx: &impl Effects) -> Result<(), ProxyError> {
    let previews = fx
        .previews()
        .ok_or_else(|| refusal(Reason::PreviewUnknown, "previews are off"))?;
    let req = request(&mut ctx.intent)?;
    let name = req
        .headers()
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .or(req.uri().host())
        .unwrap_or_default()
        .to_string();
    let (port, id) = host::parse(&name, &previews.config.domain)
        .ok_or_else(|| refusal(Reason::PreviewUnknown, format!("{name:?} is not a preview's name")))?;
    let own = format!("{port}-{id}.{}", previews.config.domain);
    ctx.audit.host(&own);
    let opening = req.uri().path() == OPEN_PATH;
    let claims = if opening {
        same_origin(req, previews.scheme, &name)?;
        link(&previews, req)?
    } else {
        session(&previews, req, (port, &id))?
    };
    ctx.visit = Some(Visit {
        port,
        id,
        own,
        name,
        claims,
        opening,
        previews,
    });
    Ok(())
}

/// The link a request opening a preview carries (`?t=LINK`), checked.
fn link(previews: &Previews, req: &Request<ProxyBody>) -> Result<Claims, ProxyError> {
    let token = req
        .uri()
        .query()
        .and_then(|q| form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "t"))
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    previews.signer.check_link(&token).ok_or_else(|| {
        refusal(
            Reason::PreviewLogin,
            "this preview link is not valid, or has expired; ask for a new one",
        )
    })
}

/// The session a request carries, checked: of the session cookies it has (a browser sends one), the first
/// made for this preview, else the first valid one (which the exposed phase then refuses as `preview_other`).
fn session(
    previews: &Previews,
    req: &Request<ProxyBody>,
    (port, id): (u16, &crate::names::SandboxId),
) -> Result<Claims, ProxyError> {
    let tokens = crate::preview::cookies::sessions(req.headers());
    if tokens.is_empty() {
        return Err(refusal(Reason::PreviewLogin, "this preview needs a link: ask for one"));
    }
    let valid: Vec<Claims> = tokens.iter().filter_map(|t| previews.signer.check_session(t)).collect();
    let mine = valid.iter().position(|c| c.sbx == *id && c.port == port).unwrap_or(0);
    valid.into_iter().nth(mine).ok_or_else(|| {
        refusal(
            Reason::PreviewLogin,
            "this preview's session is not valid, or has expired; open a new link",
        )
    })
}
