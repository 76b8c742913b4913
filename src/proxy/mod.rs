//! The data plane: one request pipeline. Every entry (`entry`: explicit HTTP, CONNECT, transparent TLS and
//! HTTP, the DNS responder, preview, `cordon explain`; and each request inside an intercepted tunnel, `tunnel`)
//! translates what it read into an [`Input`], hands it to [`run`] (or [`dry_run`]) and acts on the [`Outcome`].
//! The steps run here, in this order, for every kind, over one context (`exchange::Exchange`: the effects, the
//! configuration, the audit record) and with one set of effects (`effects::Effects`): live traffic's
//! (`live::Live`) act, a dry run's (`dry::Dry`) only note what they would do. No step asks which it runs with.
//!
//!
//! 1. **identify**: who is talking: a proxy credential, the source address, the identity a tunnel was opened
//!    with (checked again: revoked, expired, removed), or the sandbox named to a dry run. Failed attempts
//!    are throttled per source address.
//! 2. **admit**: the sandbox's request rates and byte budget. Everything an identified sandbox sends counts,
//!    refused or unreadable alike: a sandbox hammering a denied host, or sending garbage, is still hammering.
//!    And the audit output: while records cannot be written, nothing is served (503 `audit_unavailable`).
//! 3. **target**: where to, as the one target parser read it. Its errors are reported only now, so a client
//!    that is not identified learns nothing from them.
//! 4. **hygiene**: the destination's name carries no placeholder or secret (it would leave through the
//!    resolver); the request is unambiguous: a clean path, one Host that names the tunnel's host, no CONNECT
//!    inside an interception.
//! 5. **decide**: what the policy permits (`handover::Permit`), which carries what later steps need (the rule, its
//!    TLS mode and action, the credentials usable), so nothing looks a rule up again.
//! 6. then, by what is asked:
//!    - a **tunnel**: its connection caps, then dial (`tls: tunnel`) or resolve (intercept): [`Outcome::Open`];
//!    - a **request**: hop-by-hop headers stripped, what an MCP or GraphQL rule says of its messages
//!      (`protocol`), a human's approval (`action: ask`, before any credential is attached), credentials
//!      (`handover::Reply` carries what the response needs), sent upstream, the response streamed back:
//!      [`Outcome::Respond`];
//!    - a **DNS name**: resolved through the address guard: [`Outcome::Answer`].
//!
//! A refusal at any step is the outcome: the response (if the entry can give one) and the audit record.
//! There is one audit record per exchange, filled only here: written at the refusal, when the response body
//! ends, or when the tunnel closes. A dry run (`cordon explain`) takes the same steps with nothing counted,
//! held, attached or sent (its effects are `dry::Dry`), notes what each step found (`notes`), and goes on past
//! refusals to show every reason.

mod ask;
mod budget;
mod checks;
mod dry;
mod effects;
pub mod entry;
mod exchange;
mod handover;
pub(crate) mod headers;
mod identify;
mod input;
mod live;
mod name;
mod notes;
mod preview;
mod protocol;
mod record;
mod request;
mod respond;
pub mod server;
pub(crate) mod tunnel;

use std::sync::Arc;

use crate::error::ProxyError;
use crate::generation::Generation;
use crate::state::ProxyState;

use dry::Dry;
use exchange::Exchange;
pub(crate) use identify::by_source;
pub(crate) use input::{Claim, Input, Inside, Intent, Opened, Outcome, TunnelRecord, WebSocketGuard};
use live::Live;
pub(crate) use notes::{CredentialUse, Ending, Note, Notes};
pub(crate) use preview::{PreviewRefusal, allowed as preview_allowed, live as preview_live, serve as preview};
pub(crate) use record::{malformed, refuse_connection};
pub(crate) use request::is_websocket;

/// Run the steps for live traffic.
pub(crate) async fn run(state: &Arc<ProxyState>, input: Input) -> Outcome {
    let ex = Exchange::start(Arc::new(Live(state.clone())), state.current(), &input);
    flow(ex, input).await
}

/// Run the same steps on `generation` with effects that only note what each would do (`cordon explain`).
pub(crate) async fn dry_run(generation: Arc<Generation>, input: Input) -> Notes {
    let notes = Notes::default();
    let ex = Exchange::start(Arc::new(Dry(notes.clone())), generation, &input);
    flow(ex, input).await;
    notes
}

/// The steps, in order, for every kind of input.
async fn flow(mut ex: Exchange, input: Input) -> Outcome {
    let Input {
        claim,
        target,
        intent: ask,
        ..
    } = input;
    // A request that is not for a proxy at all says nothing about who sent it: refused before anything else.
    if let Err(ProxyError::NotProxyRequest) = &target {
        return ex.refuse(ProxyError::NotProxyRequest);
    }
    // A signed credential of a sandbox created on another replica a moment ago: learn of it first (PostgreSQL
    // store only; one bounded read, the only one a request may make).
    ex.fx.learn(&claim).await;
    // Steps 1 to 5 wait on nothing: whatever waits (approval, credential sources, the upstream) comes after.
    let checks = || {
        // 1. Who is talking.
        let sandbox = ex.identify(claim)?;
        // 2. Rates and budget: everything an identified sandbox sends counts, readable or not.
        ex.admit(&sandbox, target.as_ref().ok(), &ask)?;
        // 3. Where to.
        let target = target?;
        // 4. Hygiene.
        ex.hygiene(&sandbox, &target, &ask)?;
        // 5. The decision.
        let decision = ex.decide(&sandbox, &target, &ask)?;
        Ok::<_, ProxyError>((sandbox, target, decision))
    };
    let checked = checks();
    let (sandbox, target, decision) = match checked {
        Ok(checked) => checked,
        Err(e) => return ex.refuse(e),
    };
    // 6. What was asked.
    match ask {
        Intent::Tunnel => tunnel::open::open(ex, sandbox, target, decision).await,
        Intent::Request { req, inside } => request::forward(ex, sandbox, target, decision, req, inside).await,
        Intent::Name { resolve, .. } => name::answer(ex, target, decision, resolve).await,
    }
}
