//! What the phases do to the world beyond deciding, as one trait with two implementations: [`super::live::Live`]
//! acts (counts, holds, attaches, dials, sends) and [`super::dry::Dry`] notes what it would have done, for
//! `cordon explain`. The phases are the same code for both: none of them asks which kind of run it is in, so
//! `explain` cannot drift from live traffic by a branch someone forgot.
//!
//! Every method here is an effect a phase has, named for the phase that has it. A method that returns
//! `Option` returns `None` in a dry run where live traffic would go on to something that only live traffic
//! has (an upstream's answer, an open tunnel, a resolved name).

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};
use hyper::body::Incoming;
use tokio::net::TcpStream;

use super::handover::Permit;
use super::handover::Reply;
use super::input::{Claim, Inside, Intent};
use super::notes::Note;
use crate::addr::ClientAddr;
use crate::approval::{HeldRequest, Resolution};
use crate::audit::{self, Kind};
use crate::body::ProxyBody;
use crate::error::ProxyError;
use crate::generation::Generation;
use crate::identity::{AuthFailure, Sandbox};
use crate::leak::scan::body::ScanVerdict;
use crate::limits::{Meter, OpenGuard};
use crate::names::{CredentialName, SandboxId};
use crate::policy::{Policy, TlsMode};
use crate::preview::Previews;
use crate::proxy::tunnel::scope::ConnScope;
use crate::state::ProtocolMemory;
use crate::target::Target;

/// A tunnel's upstream side once its checks passed: its slot under the open caps, and the dialled stream for a
/// `tls: tunnel` rule (with the address it reached) or the addresses an interception will dial.
pub(crate) struct Dialled {
    /// The tunnel's slot under the sandbox's and user's open caps.
    pub(crate) open: OpenGuard,
    /// `tls: tunnel`: the stream and where it goes.
    pub(crate) stream: Option<(TcpStream, SocketAddr)>,
    /// Intercepted: the addresses the destination resolved to, each passed by the guard.
    pub(crate) resolved: Vec<SocketAddr>,
}

/// The credentials step's result: what the response step needs, the request body's scan, and the names of the
/// credentials attached (for the record; never their values).
pub(crate) struct Attached {
    /// What the response step needs to keep secrets in.
    pub(super) reply: Reply,
    /// The request body's scan, asked when the upload ended early.
    pub(super) scan: Option<ScanVerdict>,
    /// The credentials attached.
    pub(super) names: Vec<CredentialName>,
}

/// The effects of the phases. See the module doc. Every phase takes them as `&impl Effects`: the two runs are two
/// instances of the same code, with no dynamic dispatch or boxed future on the request path.
pub(crate) trait Effects: Send + Sync {
    /// Where this run's audit records go.
    fn audit_sink(&self) -> Arc<dyn audit::Sink>;

    /// Protocol: what the protocols remember across requests (MCP pins, held tools and sessions, GraphQL's
    /// persisted documents). A dry run's is its own, empty and forgotten when it ends.
    fn memory(&self) -> &ProtocolMemory;

    /// Protocol and approve: the request's whole body, read (bounded) and put back (`None`: a dry run, which has
    /// no body; what needs it is noted instead).
    fn body(&self, req: &mut Request<ProxyBody>) -> impl Future<Output = Result<Option<Bytes>, ProxyError>> + Send;

    /// Note what a phase found (a dry run keeps it; live traffic has its audit record instead).
    fn note(&self, note: Note);

    /// A check's verdict: live, a refusal ends the exchange; a dry run notes it and goes on, to show what the
    /// later checks say too.
    fn enforce(&self, verdict: Result<(), ProxyError>) -> Result<(), ProxyError>;

    /// The policy's refusal, already noted with its decision: live, it ends the exchange; a dry run goes on.
    fn denied(&self, denied: ProxyError) -> Result<(), ProxyError>;

    /// Whether the exchange ends with `err` as live traffic ends (its record written, its answer given); a dry
    /// run notes it instead and ends with what it noted.
    fn ends(&self, err: &ProxyError) -> bool;

    /// Identify: a signed credential of a sandbox created on another replica a moment ago is learnt first.
    fn learn(&self, claim: &Claim) -> impl Future<Output = ()> + Send;

    /// Identify: a proxy credential judged, failed attempts counted and throttled per source address.
    fn authenticate(
        &self,
        generation: &Generation,
        client: ClientAddr,
        credentials: Result<Option<(String, String)>, AuthFailure>,
        audit: &mut audit::Pending,
    ) -> Result<Arc<Sandbox>, ProxyError>;

    /// Identify: a run-time sandbox whose source range holds `ip`.
    fn by_source(&self, ip: IpAddr) -> Option<Arc<Sandbox>>;

    /// Identify: a tunnel's identity still holds (not revoked, expired or removed).
    fn entitled(&self, generation: &Generation, sandbox: &Sandbox) -> Result<(), ProxyError>;

    /// Identify: the client connection tied to the sandbox, under its connection caps.
    fn attach(&self, conn: Option<&Arc<ConnScope>>, sandbox: &Arc<Sandbox>, kind: Kind) -> Result<(), ProxyError>;

    /// Admit: the sandbox's rates and byte budget, counted; and whether its records can be written.
    fn admit(&self, sandbox: &Sandbox, target: Option<&Target>, ask: &Intent) -> Result<(), ProxyError>;

    /// Decide: the sandbox's policy under `generation` (a run-time sandbox's is its record's now).
    fn policy_for(&self, generation: &Generation, sandbox: &Sandbox) -> Option<Arc<Policy>>;

    /// Access and record: whether the sandbox may ask for access from inside, and on what terms.
    fn access_terms(&self, generation: &Generation, sandbox: &Sandbox) -> Option<crate::policy::AccessTerms>;

    /// Access: the run-time control plane that keeps access requests (`None`: a dry run, which files nothing).
    fn control(&self) -> Option<&crate::control::Control>;

    /// Decide: whether the sandbox is held for violations (`on_violation: hold`).
    fn held(&self, sandbox: &Sandbox) -> bool;

    /// Approve: hold the request for a person (`None`: a dry run, which notes that it would).
    fn ask(&self, rule: usize, held: HeldRequest) -> impl Future<Output = Option<Resolution>> + Send;

    /// Credentials: placeholders checked, the usable credentials applied, the budget of each taken.
    fn credentials(
        &self,
        generation: &Arc<Generation>,
        sandbox: &Sandbox,
        target: &Target,
        decision: &Permit,
        req: &mut Request<ProxyBody>,
        meter: Option<Arc<dyn Meter>>,
    ) -> impl Future<Output = Result<Attached, ProxyError>> + Send;

    /// The meter of a plain HTTP exchange's bodies against the sandbox's byte budget.
    fn meter(&self, kind: Kind, sandbox: &Arc<Sandbox>) -> Option<Arc<dyn Meter>>;

    /// Send: the request through the sandbox's pool (`None`: a dry run, which notes what the pool's guard says
    /// of a plain request's destination).
    fn send(
        &self,
        generation: &Arc<Generation>,
        sandbox: &Sandbox,
        target: &Target,
        inside: Option<&Arc<Inside>>,
        websocket: bool,
        req: Request<ProxyBody>,
    ) -> impl Future<Output = Option<Result<Response<Incoming>, ProxyError>>> + Send;

    /// A tunnel: its connection caps, then dialled (`tls: tunnel`) or resolved (intercepted) (`None`: a dry
    /// run, which notes what the guard says and what the CONNECT becomes).
    fn open(
        &self,
        generation: &Generation,
        sandbox: &Sandbox,
        target: &Target,
        tls: TlsMode,
    ) -> impl Future<Output = Option<Result<Dialled, ProxyError>>> + Send;

    /// Visitor: the previews as the preview listener serves them (`None`: a dry run, which serves none).
    fn previews(&self) -> Option<Arc<Previews>>;

    /// Exposed: sandbox `id` as it is now, if it lives (a run-time sandbox's from its record), and its source
    /// ranges.
    fn preview_sandbox(&self, generation: &Generation, id: &SandboxId) -> Option<(Sandbox, Vec<ipnet::IpNet>)>;

    /// Visit: the request to a preview's dev server at `to`, an upgrade relayed when it agrees (`None`: a dry
    /// run).
    fn visit(
        &self,
        generation: &Generation,
        req: Request<ProxyBody>,
        to: SocketAddr,
    ) -> impl Future<Output = Option<Result<Response<ProxyBody>, ProxyError>>> + Send;

    /// A DNS name resolved through the guard (`None`: a dry run).
    fn resolve(
        &self,
        generation: &Generation,
        name: &str,
    ) -> impl Future<Output = Option<Result<Vec<IpAddr>, crate::net::DialError>>> + Send;
}
