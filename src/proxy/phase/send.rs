//! Send: the request through the sandbox's pool, whose connector resolves, refuses (before any connection is
//! made) or dials the checked address. A dry run sends nothing; it notes what the pool's guard says of a plain
//! request's destination, and gets no answer. Takes the request in flight; writes `ctx.answer`.

use crate::error::ProxyError;
use crate::inject::outgoing::refusal;
use crate::proxy::ctx::{Ctx, slot};
use crate::proxy::effects::Effects;
use crate::proxy::input::Intent;

/// Send the request in flight and keep the upstream's answer.
pub(crate) async fn run(ctx: &mut Ctx, fx: &impl Effects) -> Result<(), ProxyError> {
    let sandbox = slot(&ctx.sandbox)?;
    let target = slot(&ctx.target)?;
    let generation = ctx.generation.clone();
    let Intent::Request { req, inside } = &mut ctx.intent else {
        return Err(ProxyError::Internal);
    };
    // What is left in its place keeps the request's Accept, for the refusal should sending fail.
    let left = crate::error::refusal::left_for_refusal(req.headers());
    let req = std::mem::replace(req, left);
    let sent = fx
        .send(&generation, sandbox, target, inside.as_ref(), ctx.websocket, req)
        .await;
    match sent {
        // A dry run sends nothing: what it would meet on the way is noted, and no answer comes.
        None => Ok(()),
        Some(Ok(answer)) => {
            ctx.answer = Some(answer);
            Ok(())
        }
        Some(Err(e)) => {
            // The body scan ended the upload: the sandbox hears why, not that the upstream failed.
            let scanned = ctx.scan.as_ref().and_then(|scan| scan.take());
            Err(match scanned {
                Some(found) => refusal(&found, sandbox, &generation.credentials),
                None => e,
            })
        }
    }
}
