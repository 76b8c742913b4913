//! The one request pipeline. Every entry (explicit HTTP, CONNECT, each request inside an intercepted tunnel,
//! transparent TLS and HTTP, the DNS responder, `cordon explain`) translates what it read into an [`Input`],
//! hands it to [`run`] (or [`dry_run`]) and acts on the [`Outcome`]. The steps run here, in this order, for
//! every kind:
//!
//! 1. **identify**: who is talking: a proxy credential, the source address, the identity a tunnel was opened
//!    with (checked again: revoked, expired, removed), or the sandbox named to a dry run. Failed attempts
//!    are throttled per source address.
//! 2. **admit**: the sandbox's request rates and byte budget. Everything an identified sandbox sends counts,
//!    refused or unreadable alike: a sandbox hammering a denied host, or sending garbage, is still hammering.
//! 3. **target**: where to, as the one target parser read it. Its errors are reported only now, so a client
//!    that is not identified learns nothing from them.
//! 4. **hygiene**: the request is unambiguous: a clean path, one Host that names the tunnel's host, no
//!    CONNECT inside an interception.
//! 5. **decide**: the policy's [`Decision`], which carries what later steps need (the rule, its TLS mode and
//!    action, the credentials usable), so nothing looks a rule up again.
//! 6. then, by what is asked:
//!    - a **tunnel**: its connection caps, then dial (`tls: tunnel`) or resolve (intercept): [`Outcome::Open`];
//!    - a **request**: hop-by-hop headers stripped, a human's approval (`action: ask`, before any credential
//!      is attached), credentials, sent upstream, the response streamed back: [`Outcome::Respond`];
//!    - a **DNS name**: resolved through the address guard: [`Outcome::Answer`].
//!
//! A refusal at any step is the outcome: the response (if the entry can give one) and the audit record.
//! There is one audit record per exchange, filled only here: written at the refusal, when the response body
//! ends, or when the tunnel closes. A dry run (`cordon explain`) takes the same steps with nothing counted,
//! held, attached or sent, notes what each step found, and goes on past refusals to show every reason.

mod checks;
mod dry;
mod exchange;
mod identify;
mod name;
mod record;
mod request;
mod tunnel;

use std::sync::Arc;

use http::{Request, Response};

use crate::addr::{ClientAddr, OriginalDst};
use crate::audit::Kind;
use crate::body::ProxyBody;
use crate::dns::Answer;
use crate::error::ProxyError;
use crate::identity::{AuthFailure, Sandbox};
use crate::session::scope::ConnScope;
use crate::state::{Generation, ProxyState};
use crate::target::Target;

pub(crate) use dry::{CredentialUse, Note, Notes};
use exchange::Exchange;
pub(crate) use identify::by_source;
pub(crate) use record::{malformed, refuse_connection};
pub(crate) use request::{Inside, is_websocket};
pub(crate) use tunnel::{Opened, TunnelRecord};

/// What an entry read, translated: who, where, what.
pub(crate) struct Input {
    /// The kind of traffic, as the audit record names it.
    pub(crate) kind: Kind,
    /// The client's address.
    pub(crate) client: ClientAddr,
    /// For a connection the kernel redirected to the transparent listener: where it was going.
    pub(crate) original_dst: Option<OriginalDst>,
    /// The client connection, tied to the sandboxes it serves (closed when one loses access).
    pub(crate) conn: Option<Arc<ConnScope>>,
    /// Who the client says it is.
    pub(crate) claim: Claim,
    /// Where it wants to go, as the one target parser read it.
    pub(crate) target: Result<Target, ProxyError>,
    /// What it asks for.
    pub(crate) ask: Ask,
}

/// Who the client says it is.
pub(crate) enum Claim {
    /// What its `Proxy-Authorization` said (`identity::credentials`): an id and a token or signed credential,
    /// nothing (then the source address decides), or a malformed header.
    Credentials(Result<Option<(String, String)>, AuthFailure>),
    /// Nothing: it is known by its source address alone (transparent traffic, DNS).
    Source,
    /// The identity its tunnel was opened with, checked again for each request (revoked, expired, removed).
    Established(Arc<Sandbox>),
    /// The sandbox an operator names for a dry run.
    Named(String),
}

/// What the client asks for.
pub(crate) enum Ask {
    /// A tunnel to the target: a CONNECT, or a transparent TLS connection.
    Tunnel,
    /// One HTTP request: plain (`inside` is `None`), or inside an interception.
    Request {
        /// The request as read (its body streams on).
        req: Request<ProxyBody>,
        /// What the interception it arrived on shares, if any.
        inside: Option<Arc<Inside>>,
    },
    /// The target's host as a DNS name, for the responder.
    Name {
        /// The name as asked (recorded even when it is not a host name).
        name: String,
        /// The record type asked for, for the audit record.
        qtype: String,
        /// Whether to resolve it (A and AAAA); other types are only judged.
        resolve: bool,
    },
}

/// What the entry does next.
pub(crate) enum Outcome {
    /// Give the client this response: the upstream's, or a refusal's.
    Respond(Response<ProxyBody>),
    /// Open this tunnel (after answering 200 to a CONNECT).
    Open(Box<Opened>),
    /// Answer the DNS query so.
    Answer(Answer),
    /// A dry run ended; what it found is in its notes.
    Dry,
}

impl Outcome {
    /// The response for an entry that can only give one: a tunnel or a DNS answer where a response was
    /// expected means the entry asked for something else than it handles.
    pub(crate) fn into_response(self) -> Response<ProxyBody> {
        match self {
            Outcome::Respond(resp) => resp,
            Outcome::Open(_) | Outcome::Answer(_) | Outcome::Dry => ProxyError::Internal.response(),
        }
    }
}

/// Run the steps for live traffic.
pub(crate) async fn run(state: &Arc<ProxyState>, input: Input) -> Outcome {
    let ex = Exchange::live(state.clone(), &input);
    flow(ex, input).await
}

/// Run the same steps on `generation` without effect, noting what each found (`cordon explain`).
pub(crate) async fn dry_run(generation: Arc<Generation>, input: Input) -> Notes {
    let notes = Notes::default();
    let ex = Exchange::dry(generation, &input, notes.clone());
    flow(ex, input).await;
    notes
}

/// The steps, in order, for every kind of input.
async fn flow(mut ex: Exchange, input: Input) -> Outcome {
    let Input { claim, target, ask, .. } = input;
    // A request that is not for a proxy at all says nothing about who sent it: refused before anything else.
    if let Err(ProxyError::NotProxyRequest) = &target {
        return ex.refuse(ProxyError::NotProxyRequest);
    }
    // Steps 1 to 5 wait on nothing: whatever waits (approval, credential sources, the upstream) comes after.
    let checks = || {
        // 1. Who is talking.
        let sandbox = ex.identify(claim)?;
        // 2. Rates and budget: everything an identified sandbox sends counts, readable or not.
        ex.admit(&sandbox, target.as_ref().ok(), &ask)?;
        // 3. Where to.
        let target = target?;
        // 4. Hygiene.
        ex.hygiene(&target, &ask)?;
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
        Ask::Tunnel => tunnel::open(ex, sandbox, target, decision).await,
        Ask::Request { req, inside } => request::forward(ex, sandbox, target, decision, req, inside).await,
        Ask::Name { resolve, .. } => name::answer(ex, target, decision, resolve).await,
    }
}
