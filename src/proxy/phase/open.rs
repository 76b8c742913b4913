//! Open, the last phase of a tunnel (a CONNECT, or a transparent TLS connection): its connection caps, then the
//! upstream dialled (`tls: tunnel`) or resolved (intercepted) by the effects: every check before the client
//! hears 200. A dry run opens nothing; it notes what the guard says and what the CONNECT becomes. Writes
//! `ctx.ending`.

use crate::error::ProxyError;
use crate::proxy::ctx::{Ctx, Ended, slot};
use crate::proxy::effects::Effects;

/// Caps, then dial or resolve.
pub(crate) async fn run(ctx: &mut Ctx, fx: &impl Effects) -> Result<(), ProxyError> {
    let sandbox = slot(&ctx.sandbox)?.clone();
    let tls = slot(&ctx.permit)?.tls;
    let generation = ctx.generation.clone();
    let Some(opened) = fx.open(&generation, &sandbox, slot(&ctx.target)?, tls).await else {
        ctx.ending = Some(Ended::Dry);
        return Ok(());
    };
    let dialled = opened?;
    let upstream = match dialled.stream {
        Some((stream, addr)) => {
            ctx.audit.dialled(addr.to_string());
            Some(stream)
        }
        None => {
            if let Some(original) = ctx.original_dst {
                // Say whether the sandbox aimed somewhere cordon would not go.
                ctx.audit.original_dst_differs(!dialled.resolved.contains(&original.0));
            }
            None
        }
    };
    // The tunnel takes its target with it: nothing after this phase needs it.
    let target = ctx.target.take().ok_or(ProxyError::Internal)?;
    ctx.ending = Some(Ended::Open {
        sandbox,
        target,
        upstream,
        open: dialled.open,
    });
    Ok(())
}
