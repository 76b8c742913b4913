//! Exposed: whether the preview is still open to the person (the link or session made for it, the preview not
//! revoked, the sandbox alive and the incarnation the link was made for, the port among its policy's `expose`);
//! a request with a session, from the preview's own origin only (else 403 `preview_cross_origin`, recorded with
//! the person and the sandbox whose session it used); then where its dev server is: the sandbox's own address,
//! passed by the address guard. Writes `ctx.dev_server`.

use crate::error::ProxyError;
use crate::proxy::ctx::{Ctx, request, slot};
use crate::proxy::effects::Effects;
use crate::proxy::handover::DevServer;
use crate::proxy::preview::{address, allowed, same_origin};

/// Check the preview is open to the person, and find its dev server.
pub(crate) async fn run(ctx: &mut Ctx, fx: &impl Effects) -> Result<(), ProxyError> {
    let visit = slot(&ctx.visit)?;
    let found = fx.preview_sandbox(&ctx.generation, &visit.id);
    let generation = &ctx.generation;
    let (sandbox, cidrs) = allowed(&visit.previews, &visit.claims, (visit.port, &visit.id), found, |s| {
        fx.policy_for(generation, s)
    })?;
    ctx.audit.identity(&sandbox);
    ctx.audit.visitor(&visit.claims.user);
    if !visit.opening {
        same_origin(request(&mut ctx.intent)?, visit.previews.scheme, &visit.name)?;
    }
    // Open to the person: what fails from here on (a sandbox with no address of its own, a dev server that does
    // not answer) was allowed and failed; the address guard's refusal is still a refusal.
    ctx.audit.allowed(None, None);
    let at = address(generation, &cidrs, visit.port)?;
    ctx.dev_server = Some(DevServer { at });
    Ok(())
}
