//! The phases' effects on live traffic: everything counts and happens, on the state that outlives reloads.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};
use hyper::body::Incoming;

use super::effects::{Attached, Dialled, Effects};
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
use crate::identity::{self, AuthFailure, Sandbox};
use crate::limits::{LimitRefusal, Meter};
use crate::names::SandboxId;
use crate::net::DialError;
use crate::policy::{Policy, TlsMode};
use crate::preview::Previews;
use crate::proxy::tunnel::scope::ConnScope;
use crate::session::admission::{self, BudgetMeter};
use crate::state::{ProtocolMemory, ProxyState};
use crate::target::Target;
use crate::upstream::send::send;

/// Live traffic's effects.
pub(crate) struct Live(pub(crate) Arc<ProxyState>);

impl Live {
    fn throttled(&self, client: ClientAddr, audit: &mut audit::Pending, refusal: LimitRefusal) -> ProxyError {
        self.0.auth_bursts.count(client.ip());
        audit.counted_elsewhere();
        ProxyError::Limited(refusal)
    }
}

impl Effects for Live {
    fn audit_sink(&self) -> Arc<dyn audit::Sink> {
        self.0.audit.clone()
    }

    fn memory(&self) -> &ProtocolMemory {
        &self.0.memory
    }

    async fn body(&self, req: &mut Request<ProxyBody>) -> Result<Option<Bytes>, ProxyError> {
        super::protocol::read::read_whole(req).await.map(Some)
    }

    fn note(&self, _: Note) {}

    fn enforce(&self, verdict: Result<(), ProxyError>) -> Result<(), ProxyError> {
        verdict
    }

    fn denied(&self, denied: ProxyError) -> Result<(), ProxyError> {
        Err(denied)
    }

    fn ends(&self, _: &ProxyError) -> bool {
        true
    }

    async fn learn(&self, claim: &Claim) {
        // PostgreSQL store only; one bounded read, the only one a request may make.
        if let Claim::Credentials(Ok(Some((id, credential)))) = claim {
            crate::replica::learn_sandbox(&self.0.control, &self.0.cas, id, credential).await;
        }
    }

    /// Failed attempts count against the (source address, claimed sandbox id) and, under a higher ceiling, the
    /// source address; over `limits.auth_failures` that claim from that address gets 429 for a while (over
    /// `limits.per_source.auth_failures`, everything from it), audited once per burst.
    fn authenticate(
        &self,
        generation: &Generation,
        client: ClientAddr,
        credentials: Result<Option<(String, String)>, AuthFailure>,
        audit: &mut audit::Pending,
    ) -> Result<Arc<Sandbox>, ProxyError> {
        let ip = client.ip();
        let limits = self.0.limits();
        let claim = credentials
            .as_ref()
            .ok()
            .and_then(Option::as_ref)
            .map(|(id, _)| id.as_str());
        // SECURITY: an address over its rate of failed authentications for one sandbox id is refused outright
        // for that id until its block ends (over its ceiling, for every id), whatever it sends, so tokens
        // cannot be guessed at line rate; its neighbours behind the same address keep working.
        if let Some(refusal) = admission::auth_blocked(&limits, ip, claim) {
            return Err(self.throttled(client, audit, refusal));
        }
        match identity::identify(&generation.identities, &self.0.control, &credentials, ip) {
            Ok(sandbox) => Ok(sandbox),
            // Clients commonly ask without credentials first and retry with them after the 407.
            Err(AuthFailure::Missing) => Err(ProxyError::Auth(AuthFailure::Missing)),
            Err(failure) => Err(match admission::auth_failed(&limits, ip, claim) {
                Ok(()) => ProxyError::Auth(failure),
                Err(refusal) => self.throttled(client, audit, refusal),
            }),
        }
    }

    fn by_source(&self, ip: IpAddr) -> Option<Arc<Sandbox>> {
        self.0.control.by_source(ip, crate::control::now())
    }

    fn entitled(&self, generation: &Generation, sandbox: &Sandbox) -> Result<(), ProxyError> {
        self.0
            .entitled(generation, sandbox)
            .map_err(|why| ProxyError::Auth(why.into()))
    }

    fn attach(&self, conn: Option<&Arc<ConnScope>>, sandbox: &Arc<Sandbox>, kind: Kind) -> Result<(), ProxyError> {
        let Some(conn) = conn else { return Ok(()) };
        // A CONNECT's connection turns into a tunnel, which is counted as such.
        conn.attach(&self.0.sessions, &self.0.limits(), sandbox, kind != Kind::Connect)
            .map_err(ProxyError::Limited)
    }

    fn admit(&self, sandbox: &Sandbox, target: Option<&Target>, ask: &Intent) -> Result<(), ProxyError> {
        let state = &self.0;
        // SECURITY: a declared sandbox revoked for violations (on_violation: revoke) is refused as revoked.
        if state.violations.suspended(&sandbox.id) {
            return Err(ProxyError::Auth(AuthFailure::Revoked));
        }
        let limits = state.limits();
        match ask {
            // SECURITY: a query is a request of the sandbox: a flood of them is held to its request rate, so it
            // can neither exhaust the resolver nor stream data out at line rate through allowed names.
            Intent::Name { .. } => admission::query(&limits, sandbox, target),
            Intent::Tunnel | Intent::Request { .. } | Intent::Visit { .. } => {
                admission::request(&limits, sandbox, target)
            }
        }
        .map_err(ProxyError::Limited)?;
        // SECURITY: nothing is served that cannot be recorded: while the audit output fails (a disk that failed
        // or filled), every request, tunnel and query is refused until a write succeeds again.
        match state.audit.health() {
            Some(health) if !health.is_up() => Err(ProxyError::AuditUnavailable),
            _ => Ok(()),
        }
    }

    fn policy_for(&self, generation: &Generation, sandbox: &Sandbox) -> Option<Arc<Policy>> {
        generation.policy_for(sandbox, Some(&self.0.control))
    }

    fn access_terms(&self, generation: &Generation, sandbox: &Sandbox) -> Option<crate::policy::AccessTerms> {
        generation.access_terms(sandbox, Some(&self.0.control))
    }

    fn control(&self) -> Option<&crate::control::Control> {
        Some(&self.0.control)
    }

    fn held(&self, sandbox: &Sandbox) -> bool {
        self.0.violations.held(&sandbox.id)
    }

    async fn ask(&self, _rule: usize, held: HeldRequest) -> Option<Resolution> {
        Some(self.0.approvals.ask(held).await)
    }

    async fn credentials(
        &self,
        generation: &Arc<Generation>,
        sandbox: &Sandbox,
        _: &Target,
        decision: &Permit,
        req: &mut Request<ProxyBody>,
        meter: Option<Arc<dyn Meter>>,
    ) -> Result<Attached, ProxyError> {
        let Some(policy) = decision.policy.as_deref() else {
            return Err(ProxyError::Internal);
        };
        let (mut parts, body) = std::mem::replace(req, Request::new(crate::body::empty())).into_parts();
        let applied = match generation
            .credentials
            .apply(sandbox, policy, &decision.credentials, &mut parts, body)
            .await
        {
            Ok(applied) => applied,
            Err(e) => {
                // Refused: what stays in flight is the request's Accept alone (its refusal is written as it
                // prefers), never a head a credential may have been written into.
                *req = crate::error::refusal::left_for_refusal(&parts.headers);
                return Err(e);
            }
        };
        *req = Request::from_parts(parts, applied.body);
        super::budget::take(&self.0, generation, sandbox, &applied.names)?;
        let reply = Reply {
            meter,
            aws_keys: generation.credentials.signs_aws(&applied.names),
            tokens: applied.tokens,
            masker: generation.credentials.masker(sandbox, policy, &decision.masked).await?,
        };
        Ok(Attached {
            reply,
            scan: applied.verdict,
            names: applied.names,
        })
    }

    fn meter(&self, kind: Kind, sandbox: &Arc<Sandbox>) -> Option<Arc<dyn Meter>> {
        // A request inside a tunnel has none: its stream counts.
        if kind != Kind::Http {
            return None;
        }
        BudgetMeter::for_sandbox(self.0.limits(), self.0.sessions.clone(), sandbox.clone())
    }

    async fn send(
        &self,
        generation: &Arc<Generation>,
        sandbox: &Sandbox,
        _target: &Target,
        inside: Option<&Arc<Inside>>,
        websocket: bool,
        req: Request<ProxyBody>,
    ) -> Option<Result<Response<Incoming>, ProxyError>> {
        // No separate lookup here: the pool's connector resolves, refuses (before any connection is made) or
        // dials the checked address, and its refusal comes back as the same 403.
        let clients = match inside {
            Some(inside) => inside.pools(generation, &sandbox.id),
            None => generation.upstreams.for_sandbox(&sandbox.id),
        };
        let pool = if websocket { &clients.http1 } else { &clients.any };
        Some(send(pool, req, generation.config.timeouts.upstream_headers).await)
    }

    async fn open(
        &self,
        generation: &Generation,
        sandbox: &Sandbox,
        target: &Target,
        tls: TlsMode,
    ) -> Option<Result<Dialled, ProxyError>> {
        let opened = async {
            // A tunnel is a connection of the sandbox: its rate and the open caps apply before the 200.
            let open = admission::tunnel(&self.0.limits(), sandbox).map_err(ProxyError::Limited)?;
            Ok(match tls {
                TlsMode::Tunnel => Dialled {
                    open,
                    stream: Some(generation.dialer.dial(target).await?),
                    resolved: Vec::new(),
                },
                // Refuse now rather than after the TLS handshake; the pool checks again when it dials.
                TlsMode::Intercept => Dialled {
                    open,
                    stream: None,
                    resolved: generation.dialer.resolve(target).await?,
                },
            })
        };
        Some(opened.await)
    }

    fn previews(&self) -> Option<Arc<Previews>> {
        self.0.previews.clone()
    }

    fn preview_sandbox(&self, generation: &Generation, id: &SandboxId) -> Option<(Sandbox, Vec<ipnet::IpNet>)> {
        super::preview::live(&self.0, generation, id)
    }

    async fn visit(
        &self,
        generation: &Generation,
        req: Request<ProxyBody>,
        to: SocketAddr,
    ) -> Option<Result<Response<ProxyBody>, ProxyError>> {
        let timeout = generation.config.timeouts.upstream_headers;
        Some(super::preview::forward(&self.0.tasks, timeout, req, to).await)
    }

    async fn resolve(&self, generation: &Generation, name: &str) -> Option<Result<Vec<IpAddr>, DialError>> {
        Some(generation.dialer.addresses(name).await)
    }
}
