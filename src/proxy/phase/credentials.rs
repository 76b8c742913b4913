//! Credentials: placeholders checked and the credentials the decision found usable applied, each taking its
//! place in its budget; the audit record names the credentials applied (never their values). SECURITY: never
//! over cleartext: plain HTTP gets no credential, and a placeholder in it is refused. Writes `ctx.reply` (what
//! the response needs to keep secrets in) and `ctx.scan` (the request body's scan, asked when the upload ended
//! early); attaches to the request in flight.

use crate::error::ProxyError;
use crate::proxy::ctx::{Ctx, slot};
use crate::proxy::effects::Effects;

/// Apply the usable credentials to the request in flight.
pub(crate) async fn run(ctx: &mut Ctx, fx: &impl Effects) -> Result<(), ProxyError> {
    let generation = ctx.generation.clone();
    let sandbox = slot(&ctx.sandbox)?;
    let target = slot(&ctx.target)?;
    let meter = ctx.meter.clone();
    let permit = slot(&ctx.permit)?;
    let req = crate::proxy::ctx::request(&mut ctx.intent)?;
    let attached = fx.credentials(&generation, sandbox, target, permit, req, meter).await?;
    ctx.audit.credentials(attached.names);
    ctx.reply = Some(attached.reply);
    ctx.scan = attached.scan;
    Ok(())
}
