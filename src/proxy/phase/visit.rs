//! Visit, a preview's last phase: a link opened sets the session cookie and sends the browser to `/`; any other
//! request goes to the dev server without cordon's cookie, and the dev server's `Set-Cookie` lines that name
//! cordon's cookie or another domain than the preview's are removed from its answer. A dry run forwards
//! nothing. Takes the request in flight; writes `ctx.ending`.

use http::Request;

use crate::error::ProxyError;
use crate::preview::cookies;
use crate::proxy::ctx::{Ctx, Ended, request, slot};
use crate::proxy::effects::Effects;
use crate::proxy::preview::session_cookie;

/// Open the link, or forward the request to the dev server.
pub(crate) async fn run(ctx: &mut Ctx, fx: &impl Effects) -> Result<(), ProxyError> {
    let visit = slot(&ctx.visit)?;
    if visit.opening {
        ctx.ending = Some(Ended::Respond(session_cookie(&visit.previews, &visit.claims)?, None));
        return Ok(());
    }
    let at = slot(&ctx.dev_server)?.at;
    let req = request(&mut ctx.intent)?;
    cookies::strip_request(req.headers_mut());
    let req = std::mem::replace(req, Request::new(crate::body::empty()));
    let Some(answer) = fx.visit(&ctx.generation, req, at).await else {
        ctx.ending = Some(Ended::Dry);
        return Ok(());
    };
    let mut resp = answer?;
    let stripped = cookies::strip_response(resp.headers_mut(), &visit.own);
    if !stripped.is_empty() {
        tracing::warn!(sandbox = %visit.id, host = %visit.own, cookies = ?stripped, "a dev server's Set-Cookie removed: it names cordon's cookie or another domain");
        ctx.audit.set_cookie_stripped(stripped);
    }
    ctx.ending = Some(Ended::Respond(resp, None));
    Ok(())
}
