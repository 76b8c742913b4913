//! The data plane: one request pipeline. Every entry (`entry`: explicit HTTP, CONNECT, transparent TLS and
//! HTTP, the DNS responder, the preview listener, `cordon explain`; and each request inside an intercepted tunnel, `tunnel`)
//! translates what it read into an [`Input`], hands it to [`run`] (or [`dry_run`]) and acts on the [`Outcome`].
//!
//! [`flow`] below is the whole order, read top to bottom. Every phase is one file in `phase/`, an
//! `async fn(&mut Ctx, &impl Effects) -> Result<(), ProxyError>` over one context (`ctx::Ctx`: what the entry
//! gave, each phase's finding in its own slot, the audit record) and one set of effects (`effects::Effects`):
//! live traffic's (`live::Live`) act, a dry run's (`dry::Dry`) only note what they would do and go on past
//! refusals. No phase asks which it runs with.
//!
//! 1. **identify**: who is talking: a proxy credential, the source address, the identity a tunnel was opened
//!    with (checked again: revoked, expired, removed), or the sandbox named to a dry run. Failed attempts
//!    are throttled per source address.
//! 2. **admit**: the sandbox's request rates and byte budget. Everything an identified sandbox sends counts,
//!    refused or unreadable alike. And the audit output: while records cannot be written, nothing is served.
//! 3. **target**: where to, as the one target parser read it. Its errors are reported only now, so a client
//!    that is not identified learns nothing from them.
//! 4. **hygiene**: the destination's name carries no placeholder or secret; the request is unambiguous: a clean
//!    path, one Host that names the tunnel's host, no CONNECT inside an interception.
//! 5. **access**, for cordon's own name alone (`access.cordon.internal`, in place of decide and all after it): the
//!    sandbox files, lists or reads its requests for access past its policy, answered by cordon itself;
//!    otherwise **decide**: what the policy permits (`handover::Permit`), with what later phases need (the rule, its TLS
//!    mode and action, the credentials usable), so nothing looks a rule up again.
//! 6. then, by what is asked:
//!    - a **request**: **shape** (hop-by-hop headers stripped, absolute URI, body counted), **protocol** (what an
//!      MCP or GraphQL rule says of its messages), **approve** (a person, before any credential is attached),
//!      **credentials** (`handover::Reply` carries what the response needs), **send** (through the sandbox's
//!      pool), **respond** (masked, filtered, streamed back);
//!    - a **tunnel**: **open** (its connection caps, then dial for `tls: tunnel` or resolve to intercept);
//!    - a **DNS name**: **answer** (resolved through the address guard).
//! 7. a **preview** (a person on the preview listener, reaching a sandbox's dev server: the other way) takes
//!    its own three: **visitor** (the preview's name, its own origin, the link or session), **exposed** (still
//!    open to the person, the port exposed, the sandbox's own address), **visit** (the session cookie set, or
//!    the request forwarded to the dev server);
//! 8. **record**, always: the exchange's one audit record is ended here, whatever happened before: written at a
//!    refusal, carried to the end of a response's body, to a tunnel's or WebSocket's close.
//!
//! A dry run (`cordon explain`) takes the same phases with nothing counted, held, attached or sent, notes what
//! each found (`notes`), and goes on past refusals to show every reason.

mod ask;
mod budget;
mod ctx;
mod dry;
mod effects;
pub mod entry;
mod handover;
pub(crate) mod headers;
mod input;
mod live;
mod notes;
mod phase;
mod preview;
mod protocol;
mod record;
pub mod server;
pub(crate) mod tunnel;

use std::sync::Arc;

use crate::error::ProxyError;
use crate::generation::Generation;
use crate::state::ProxyState;

use ctx::Ctx;
use dry::Dry;
use effects::Effects;
pub(crate) use input::{Claim, Input, Inside, Intent, Opened, Outcome, TunnelRecord, WebSocketGuard};
use live::Live;
pub(crate) use notes::{CredentialUse, Ending, Note, Notes};
pub(crate) use phase::identify::by_source;
pub(crate) use phase::shape::is_websocket;
use phase::{
    access, admit, answer, approve, credentials, decide, exposed, hygiene, identify, open, protocol as judge,
    record as end, respond, send, shape, target, visit, visitor,
};
pub(crate) use preview::{address as preview_address, allowed as preview_allowed, live as preview_live};
pub(crate) use record::{malformed, refuse_connection};

/// Run the phases for live traffic.
pub(crate) async fn run(state: &Arc<ProxyState>, input: Input) -> Outcome {
    let fx = Live(state.clone());
    let ctx = Ctx::start(&fx, state.current(), input);
    exchange(ctx, &fx).await
}

/// Run the same phases on `generation` with effects that only note what each would do (`cordon explain`).
pub(crate) async fn dry_run(generation: Arc<Generation>, input: Input) -> Notes {
    let notes = Notes::default();
    let fx = Dry::new(notes.clone());
    let ctx = Ctx::start(&fx, generation, input);
    exchange(ctx, &fx).await;
    notes
}

/// One exchange: its phases, then its record, which always runs.
async fn exchange(mut ctx: Ctx, fx: &impl Effects) -> Outcome {
    let ended = flow(&mut ctx, fx).await;
    end::run(ctx, fx, ended)
}

/// The phases, in order, for every kind of input.
async fn flow(ctx: &mut Ctx, fx: &impl Effects) -> Result<(), ProxyError> {
    if let Intent::Visit { .. } = ctx.intent {
        // A person on the preview listener, the other way (to a sandbox's dev server): which preview, and
        // whether it is open to them, then the visit.
        visitor::run(ctx, fx).await?;
        exposed::run(ctx, fx).await?;
        return visit::run(ctx, fx).await;
    }
    // Steps 1 to 5 wait on nothing: whatever waits (approval, credential sources, the upstream) comes after.
    identify::run(ctx, fx).await?;
    admit::run(ctx, fx).await?;
    target::run(ctx, fx).await?;
    hygiene::run(ctx, fx).await?;
    if access::asks_cordon(ctx) {
        // The sandbox asks cordon itself for access (`access.cordon.internal`): answered here, never sent on.
        return access::run(ctx, fx).await;
    }
    decide::run(ctx, fx).await?;
    match ctx.intent {
        Intent::Request { .. } => {
            shape::run(ctx, fx).await?;
            judge::run(ctx, fx).await?;
            approve::run(ctx, fx).await?;
            credentials::run(ctx, fx).await?;
            send::run(ctx, fx).await?;
            respond::run(ctx, fx).await
        }
        Intent::Tunnel => open::run(ctx, fx).await,
        Intent::Name { .. } => answer::run(ctx, fx).await,
        Intent::Visit { .. } => Err(ProxyError::Internal),
    }
}
