//! One exchange in flight: the context every phase reads and writes.
//!
//! What the entry gave (the configuration, the kind of traffic, the client, its connection) is set when the
//! exchange starts and no phase changes it. What a phase finds is written in its own slot, by that phase alone
//! (`tests/it/repo/phases.rs` checks it): `sandbox` by identify, `target` by target, `permit` by decide,
//! `meter` and `websocket` by shape, `judged` by protocol, `reply` and `scan` by credentials, `answer` by send,
//! `visit` by visitor and `dev_server` by exposed (a preview's), and `ending` by the last phase of each kind
//! (respond for a request, open for a tunnel, answer for a DNS query, visit for a preview, access for a
//! sandbox's request to cordon's own name). The request in flight (`intent`'s request) is the exchange's subject: the phases that change it
//! (shape, protocol and approve reading its body and putting it back, credentials) say so, and send takes it.
//! Every phase adds its own facts to the audit record; the record phase alone ends it.

use std::sync::Arc;

use http::{Request, Response};
use hyper::body::Incoming;

use super::effects::Effects;
use super::handover::{DevServer, Judgements, Permit, Reply, Visit};
use super::input::{Claim, Input, Intent, WebSocketGuard};

use crate::addr::{ClientAddr, OriginalDst};
use crate::audit::{self, Kind};
use crate::body::ProxyBody;
use crate::error::ProxyError;
use crate::generation::Generation;
use crate::identity::Sandbox;
use crate::leak::scan::body::ScanVerdict;
use crate::limits::Meter;
use crate::proxy::tunnel::scope::ConnScope;
use crate::target::Target;

/// How the exchange ends, as the last phase of its kind left it; the record phase gives it its audit record.
pub(super) enum Ended {
    /// This response goes to the client; the record is written when its body ends.
    Respond(Response<ProxyBody>, Option<Arc<dyn Meter>>),
    /// A 101 inside an interception, and the guard of the WebSocket it opens (its record travels with it).
    Upgrade(Response<ProxyBody>, Box<WebSocketGuard>),
    /// The tunnel opens (its record is written when it closes): whose and to where, the dialled upstream for a
    /// `tls: tunnel` rule (`None` to intercept), and its slot under the sandbox's and user's open caps.
    Open {
        sandbox: Arc<Sandbox>,
        target: Target,
        upstream: Option<tokio::net::TcpStream>,
        open: crate::limits::OpenGuard,
    },
    /// This DNS answer is given (its record is written now).
    Answer(crate::dns::DnsAnswer),
    /// A dry run went as far as a dry run goes: nothing was sent, dialled or resolved.
    Dry,
}

/// A request, tunnel or query in flight. See the module doc for who writes what.
pub(super) struct Ctx {
    /// The configuration this exchange started under, and finishes on.
    pub(super) generation: Arc<Generation>,
    pub(super) kind: Kind,
    pub(super) client: ClientAddr,
    /// For a redirected connection: where it was going.
    pub(super) original_dst: Option<OriginalDst>,
    /// The client connection, tied to the sandboxes identified on it.
    pub(super) conn: Option<Arc<ConnScope>>,
    /// Who the client says it is (taken by identify).
    pub(super) claim: Option<Claim>,
    /// Where it wants to go, as the one target parser read it (taken by target).
    pub(super) parsed: Option<Result<Target, ProxyError>>,
    /// What it asks for; a request's request is the exchange's subject.
    pub(super) intent: Intent,
    /// identify: who is talking.
    pub(super) sandbox: Option<Arc<Sandbox>>,
    /// target: where to.
    pub(super) target: Option<Target>,
    /// decide: what the policy permits.
    pub(super) permit: Option<Permit>,
    /// shape: the meter of a plain HTTP exchange's bodies (against the sandbox's byte budget).
    pub(super) meter: Option<Arc<dyn Meter>>,
    /// shape: a WebSocket handshake inside an interception.
    pub(super) websocket: bool,
    /// protocol: what the rule's protocol found (what a person must allow, how the answer is checked).
    pub(super) judged: Judgements,
    /// credentials: what the response needs to keep the sandbox's secrets in.
    pub(super) reply: Option<Reply>,
    /// credentials: the request body's scan, asked when the upload ended early.
    pub(super) scan: Option<ScanVerdict>,
    /// send: the upstream's answer.
    pub(super) answer: Option<Response<Incoming>>,
    /// visitor: which preview a person asks for, and the link or session they carry.
    pub(super) visit: Option<Visit>,
    /// exposed: the preview's dev server, still open to the person.
    pub(super) dev_server: Option<DevServer>,
    /// respond, open, answer or visit (the last phase of each kind): how the exchange ends.
    pub(super) ending: Option<Ended>,
    /// The audit record, ended by the record phase.
    pub(super) audit: audit::Pending,
}

impl Ctx {
    /// An exchange of `input` on `generation`, its records going where `fx` sends them.
    pub(super) fn start(fx: &impl Effects, generation: Arc<Generation>, input: Input) -> Ctx {
        let mut audit = audit::Pending::start(fx.audit_sink(), input.client.0, input.kind);
        // What is known before anyone is identified goes in the record at once, so even a 407 says where to.
        match &input.intent {
            Intent::Request { req, .. } => audit.method(Some(req.method().as_str())),
            Intent::Tunnel if input.kind == Kind::Connect => audit.method(Some("CONNECT")),
            Intent::Tunnel => audit.method(None),
            Intent::Visit { req } => {
                audit.method(Some(req.method().as_str()));
                audit.path(req.uri().path());
            }
            Intent::Name { name, qtype, .. } => {
                audit.host(name);
                audit.qtype(qtype);
            }
        }
        let original_dst = input.original_dst.or(input.conn.as_ref().and_then(|c| c.original_dst));
        if let Some(original) = original_dst {
            audit.original_dst(original.0);
        }
        if let Ok(target) = &input.target {
            if !matches!(input.intent, Intent::Name { .. } | Intent::Visit { .. }) {
                audit.target(target);
            }
            if let Intent::Request { req, .. } = &input.intent {
                audit.path(req.uri().path());
            }
        }
        Ctx {
            generation,
            kind: input.kind,
            client: input.client,
            original_dst,
            conn: input.conn,
            claim: Some(input.claim),
            parsed: Some(input.target),
            intent: input.intent,
            sandbox: None,
            target: None,
            permit: None,
            meter: None,
            websocket: false,
            judged: Judgements::default(),
            reply: None,
            scan: None,
            answer: None,
            visit: None,
            dev_server: None,
            ending: None,
            audit,
        }
    }

    /// Whether the request arrived inside an interception.
    pub(super) fn intercepted(&self) -> bool {
        matches!(self.intent, Intent::Request { inside: Some(_), .. })
    }
}

/// The request in flight, for a phase of a request (a function of the intent alone, so a phase may hold it while
/// it reads the context's other fields).
pub(super) fn request(intent: &mut Intent) -> Result<&mut Request<ProxyBody>, ProxyError> {
    match intent {
        Intent::Request { req, .. } => Ok(req),
        Intent::Visit { req } => Ok(req),
        Intent::Tunnel | Intent::Name { .. } => Err(ProxyError::Internal),
    }
}

/// What an earlier phase wrote in its slot (`slot(&ctx.target)?`). A phase that needs it runs after that phase; if it
/// somehow does not, it refuses. A function of the slot alone, so a phase may hold it while it writes the
/// context's other fields.
pub(super) fn slot<T>(found: &Option<T>) -> Result<&T, ProxyError> {
    found.as_ref().ok_or(ProxyError::Internal)
}
