//! Target: where to, as the one target parser read it when the entry translated the request. Its errors are
//! reported only now, so a client that is not identified learns nothing from them. Writes `ctx.target`.

use crate::error::ProxyError;
use crate::proxy::ctx::Ctx;
use crate::proxy::effects::Effects;

/// The destination, or the parser's refusal.
pub(crate) async fn run(ctx: &mut Ctx, _fx: &impl Effects) -> Result<(), ProxyError> {
    let parsed = ctx.parsed.take().ok_or(ProxyError::Internal)?;
    ctx.target = Some(parsed?);
    Ok(())
}
