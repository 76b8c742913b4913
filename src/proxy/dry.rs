//! A dry run's effects (`cordon explain`): the same phases as live traffic, with nothing counted, held,
//! attached, dialled or sent. What each phase would do is noted ([`super::notes`]), and a refusal is noted and
//! passed, to show what the later phases say too.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};
use hyper::body::Incoming;

use super::effects::{Attached, Dialled, Effects};
use super::handover::{Permit, Reply};
use super::input::{Claim, Inside, Intent};
use super::notes::{CredentialUse, DryRefusal, Note, Notes};
use crate::addr::ClientAddr;
use crate::approval::{HeldRequest, Resolution};
use crate::audit::Kind;
use crate::body::ProxyBody;
use crate::error::ProxyError;
use crate::generation::Generation;
use crate::identity::{AuthFailure, Sandbox};
use crate::limits::Meter;
use crate::names::SandboxId;
use crate::net::DialError;
use crate::policy::{Policy, TlsMode};
use crate::preview::Previews;
use crate::proxy::tunnel::scope::ConnScope;
use crate::state::ProtocolMemory;
use crate::target::Target;

/// A dry run's effects: where its notes go, and what its protocols remember (its own, forgotten when it ends).
pub(crate) struct Dry {
    notes: Notes,
    memory: ProtocolMemory,
}

/// Where a dry run's records go: nowhere.
struct Discard;

impl crate::audit::Sink for Discard {
    fn write(&self, _: &crate::audit::Record) {}
}

impl Dry {
    /// A dry run that notes into `notes`.
    pub(crate) fn new(notes: Notes) -> Dry {
        Dry {
            notes,
            memory: ProtocolMemory::default(),
        }
    }

    /// What the address guard says of every address the destination resolves to.
    async fn guard(&self, generation: &Generation, target: &Target) {
        match generation.dialer.explain(target).await {
            Ok(res) if res.addrs.is_empty() => {
                let e = ProxyError::Dial(DialError::NoAddress { target: target.clone() });
                self.notes
                    .push(Note::NoAddress(target.host.to_string(), DryRefusal::of(&e)));
            }
            Ok(res) => {
                for (addr, verdict) in res.addrs {
                    let refusal = verdict
                        .err()
                        .map(|r| DryRefusal::of(&ProxyError::Dial(DialError::Refused(r))));
                    self.notes.push(Note::Address(addr, refusal));
                }
            }
            Err(e) => self.notes.push(Note::Unresolved(DryRefusal::of(&ProxyError::Dial(e)))),
        }
    }
}

impl Effects for Dry {
    fn audit_sink(&self) -> Arc<dyn crate::audit::Sink> {
        Arc::new(Discard)
    }

    fn memory(&self) -> &ProtocolMemory {
        &self.memory
    }

    /// A dry run has no body: what needs it is noted instead.
    async fn body(&self, _: &mut Request<ProxyBody>) -> Result<Option<Bytes>, ProxyError> {
        Ok(None)
    }

    fn note(&self, note: Note) {
        self.notes.push(note);
    }

    fn enforce(&self, verdict: Result<(), ProxyError>) -> Result<(), ProxyError> {
        if let Err(e) = verdict {
            self.notes.push(Note::Refused(DryRefusal::of(&e)));
        }
        Ok(())
    }

    fn denied(&self, _: ProxyError) -> Result<(), ProxyError> {
        Ok(())
    }

    fn ends(&self, err: &ProxyError) -> bool {
        self.notes.push(Note::Refused(DryRefusal::of(err)));
        false
    }

    async fn learn(&self, _: &Claim) {}

    /// A dry run names its sandbox; a proxy credential is never judged (there is none).
    fn authenticate(
        &self,
        _: &Generation,
        _: ClientAddr,
        _: Result<Option<(String, String)>, AuthFailure>,
        _: &mut crate::audit::Pending,
    ) -> Result<Arc<Sandbox>, ProxyError> {
        Err(ProxyError::Auth(AuthFailure::Missing))
    }

    /// A dry run knows the configuration's sandboxes, not the run-time ones.
    fn by_source(&self, _: IpAddr) -> Option<Arc<Sandbox>> {
        None
    }

    fn entitled(&self, _: &Generation, _: &Sandbox) -> Result<(), ProxyError> {
        Ok(())
    }

    fn attach(&self, _: Option<&Arc<ConnScope>>, _: &Arc<Sandbox>, _: Kind) -> Result<(), ProxyError> {
        Ok(())
    }

    fn admit(&self, _: &Sandbox, _: Option<&Target>, _: &Intent) -> Result<(), ProxyError> {
        Ok(())
    }

    fn policy_for(&self, generation: &Generation, sandbox: &Sandbox) -> Option<Arc<Policy>> {
        generation.policy_for(sandbox, None)
    }

    fn access_terms(&self, generation: &Generation, sandbox: &Sandbox) -> Option<crate::policy::AccessTerms> {
        generation.access_terms(sandbox, None)
    }

    fn control(&self) -> Option<&crate::control::Control> {
        None
    }

    fn held(&self, _: &Sandbox) -> bool {
        false
    }

    async fn ask(&self, rule: usize, _: HeldRequest) -> Option<Resolution> {
        // A refused request is never shown to anyone.
        if !self.notes.refused() {
            self.notes.push(Note::WouldAsk(rule));
        }
        None
    }

    async fn credentials(
        &self,
        generation: &Arc<Generation>,
        _: &Sandbox,
        target: &Target,
        decision: &Permit,
        req: &mut Request<ProxyBody>,
        _: Option<Arc<dyn Meter>>,
    ) -> Result<Attached, ProxyError> {
        let Some(policy) = decision.policy.as_deref() else {
            return Err(ProxyError::Internal);
        };
        // What an earlier step refuses carries no credential: live, it never gets this far.
        let refused = self.notes.refused();
        for name in &policy.credentials {
            let usage = match generation.credentials.how(name) {
                Some(_) if refused && decision.credentials.contains(name) => CredentialUse::Refused,
                Some(how) if decision.credentials.contains(name) => CredentialUse::Applied(how),
                _ if generation
                    .credentials
                    .bound(name, target, req.method(), req.uri().path()) =>
                {
                    CredentialUse::Cleartext
                }
                _ => CredentialUse::NotBound,
            };
            self.notes.push(Note::Credential(name.clone(), usage));
        }
        Ok(Attached {
            reply: Reply::default(),
            scan: None,
            names: Vec::new(),
        })
    }

    fn meter(&self, _: Kind, _: &Arc<Sandbox>) -> Option<Arc<dyn Meter>> {
        None
    }

    async fn send(
        &self,
        generation: &Arc<Generation>,
        _: &Sandbox,
        target: &Target,
        inside: Option<&Arc<Inside>>,
        _: bool,
        _: Request<ProxyBody>,
    ) -> Option<Result<Response<Incoming>, ProxyError>> {
        // The pool's guard is what a plain request meets on its way out (inside a tunnel, the CONNECT met it).
        if inside.is_none() {
            self.guard(generation, target).await;
        }
        None
    }

    async fn open(
        &self,
        generation: &Generation,
        _: &Sandbox,
        target: &Target,
        tls: TlsMode,
    ) -> Option<Result<Dialled, ProxyError>> {
        self.guard(generation, target).await;
        // What the CONNECT becomes, once open (a refused one becomes nothing).
        if !self.notes.refused() {
            self.notes.push(Note::Tunnel(tls));
        }
        None
    }

    fn previews(&self) -> Option<Arc<Previews>> {
        None
    }

    fn preview_sandbox(&self, generation: &Generation, id: &SandboxId) -> Option<(Sandbox, Vec<ipnet::IpNet>)> {
        generation.identities.get(id).map(|s| ((*s).clone(), Vec::new()))
    }

    async fn visit(
        &self,
        _: &Generation,
        _: Request<ProxyBody>,
        _: SocketAddr,
    ) -> Option<Result<Response<ProxyBody>, ProxyError>> {
        None
    }

    async fn resolve(&self, _: &Generation, _: &str) -> Option<Result<Vec<IpAddr>, DialError>> {
        None
    }
}
