//! Identify: who is talking. A proxy credential, the source address, the identity a tunnel was opened with
//! (checked again: revoked, expired, removed), or the sandbox named to a dry run. Failed attempts are throttled
//! per source address. Writes `ctx.sandbox`.

use std::sync::Arc;

use crate::addr::{ClientAddr, OriginalDst};
use crate::error::{ProxyError, TunnelEnd};
use crate::identity::{AuthFailure, Sandbox};
use crate::proxy::ctx::Ctx;
use crate::proxy::effects::Effects;
use crate::proxy::input::Claim;
use crate::proxy::record;
use crate::state::ProxyState;

/// Identify the sender from this request alone (never from an earlier request on the connection), and tie the
/// client connection to the sandbox.
pub(crate) async fn run(ctx: &mut Ctx, fx: &impl Effects) -> Result<(), ProxyError> {
    // A request that is not for a proxy at all says nothing about who sent it: refused before anything else.
    if let Some(Err(ProxyError::NotProxyRequest)) = &ctx.parsed {
        return Err(ProxyError::NotProxyRequest);
    }
    let claim = ctx.claim.take().ok_or(ProxyError::Internal)?;
    // A signed credential of a sandbox created on another replica a moment ago: learn of it first (PostgreSQL
    // store only; one bounded read, the only one a request may make).
    fx.learn(&claim).await;
    let established = matches!(claim, Claim::Established(_));
    let sandbox = match claim {
        Claim::Credentials(credentials) => fx.authenticate(&ctx.generation, ctx.client, credentials, &mut ctx.audit)?,
        Claim::Source => {
            let ip = ctx.client.ip();
            ctx.generation
                .identities
                .by_source(ip)
                .or_else(|| fx.by_source(ip))
                .ok_or(ProxyError::UnknownSource(ip))?
        }
        Claim::Established(sandbox) => {
            ctx.audit.identity(&sandbox);
            // SECURITY: the identity was established when the tunnel opened; each request inside checks it still
            // holds (revoked, expired or removed by a reload), without waiting for the tunnel to close.
            fx.entitled(&ctx.generation, &sandbox)?;
            sandbox
        }
        // A person on the preview listener is found by the visitor phase; identify never sees one.
        Claim::Visitor => return Err(ProxyError::Internal),
        Claim::Named(id) => ctx
            .generation
            .identities
            .named(&id)
            .ok_or(ProxyError::Auth(AuthFailure::Invalid))?,
    };
    if !established {
        ctx.audit.identity(&sandbox);
    }
    fx.attach(ctx.conn.as_ref(), &sandbox, ctx.kind)?;
    ctx.sandbox = Some(sandbox);
    Ok(())
}

/// The sandbox whose source range holds `client`, for a transparent connection before anything is read
/// from it. SECURITY: a transparent connection carries no credential; an address no sandbox claims gets
/// nothing but its audit record.
pub(crate) fn by_source(state: &Arc<ProxyState>, client: ClientAddr, original: OriginalDst) -> Option<Arc<Sandbox>> {
    let sandbox = state
        .current()
        .identities
        .by_source(client.ip())
        .or_else(|| state.control.by_source(client.ip(), crate::control::now()));
    if sandbox.is_none() {
        record::refuse_connection(state, client, original, None, &TunnelEnd::UnknownSource(client.ip()));
    }
    sandbox
}
