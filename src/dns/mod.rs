//! The DNS responder for sandboxes in transparent mode: A and AAAA answers only for names the sandbox's
//! policy names, taken from cordon's own resolver and guard, everything else refused and audited.
//!
//! A sandbox that can ask any name can leak data in the names it asks (`secret.attacker.example`), even
//! if it can connect nowhere; this answers only names a rule allows, so such a query never leaves.

pub mod server;

use std::net::SocketAddr;
use std::sync::Arc;

use crate::audit::{self, Kind, Verdict};
use crate::policy::Mode;
use crate::state::{Generation, ProxyState};
use crate::target::Target;
pub use server::{Answer, Answerer, Query};

/// How long clients may cache an answer. Short: the policy can change with a reload.
pub const TTL: u32 = 30;

/// Decides queries by the sandbox's policy, resolves through the dialer, audits each query.
pub struct PolicyAnswerer {
    state: Arc<ProxyState>,
}

/// What the policy says of a name before any lookup.
enum Verdicts {
    Refused(&'static str, String),
    Allowed(Verdict),
}

impl PolicyAnswerer {
    /// An answerer over `state`.
    pub fn new(state: Arc<ProxyState>) -> PolicyAnswerer {
        PolicyAnswerer { state }
    }

    fn start(&self, q: &Query) -> audit::Pending {
        let mut pending = audit::Pending::start(self.state.audit.clone(), q.src, Kind::Dns);
        let r = pending.record();
        r.host = Some(q.name.clone());
        r.qtype = Some(q.qtype.clone());
        pending
    }

    /// The sandbox by source address, the name as the one destination parser sees it, the guard's view of
    /// it, and the policy.
    fn judge(&self, generation: &Generation, q: &Query, pending: &mut audit::Pending) -> Verdicts {
        let Some(sandbox) = generation.identities.by_source(q.src.ip()) else {
            // SECURITY: an address no sandbox claims gets no answers at all.
            return Verdicts::Refused(
                "unknown_source",
                format!("no sandbox's source_cidrs hold {}", q.src.ip()),
            );
        };
        let r = pending.record();
        r.sandbox = Some(sandbox.id.clone());
        r.user = Some(sandbox.user.clone());
        r.policy = Some(sandbox.policy.clone());
        // SECURITY: a query is a request of the sandbox: a flood of them is held to its request rate, so it
        // can neither exhaust the resolver nor stream data out at line rate through allowed names.
        if let Err(refusal) = self.state.limits().request(&sandbox.id, &sandbox.user, &q.name) {
            return Verdicts::Refused(refusal.reason, refusal.message);
        }
        // SECURITY: the name goes through target.rs like every host: a query for something that parses as an
        // address (`169.254.169.254.`) is not a name and is refused, never looked up.
        match Target::from_host_value(q.name.as_bytes(), 53) {
            Ok(t) if t.host.as_name() == Some(q.name.as_str()) => {}
            _ => return Verdicts::Refused("bad_host", format!("{:?} is not a host name", q.name)),
        }
        if let Err(refusal) = generation.dialer.guard().check_name(&q.name) {
            // SECURITY: metadata and local names are refused whatever the policy says.
            return Verdicts::Refused(refusal.code(), refusal.to_string());
        }
        match generation.policy(&sandbox.policy) {
            Some(p) if p.names_host(&q.name) => Verdicts::Allowed(Verdict::Allow),
            Some(p) if p.mode == Mode::Report => Verdicts::Allowed(Verdict::WouldDeny),
            // SECURITY: DNS exfiltration — a name no rule allows is never looked up, so the query stops here.
            _ => Verdicts::Refused(
                "no_rule",
                format!("no rule of policy {} names {}", sandbox.policy, q.name),
            ),
        }
    }
}

fn finish(mut pending: audit::Pending, decision: Verdict, reason: Option<&str>, error: Option<String>) {
    let r = pending.record();
    r.decision = decision;
    if decision == Verdict::WouldDeny {
        r.reason = Some("no_rule".into());
    }
    if let Some(reason) = reason {
        r.reason = Some(reason.into());
    }
    r.error = error;
    pending.finish();
}

impl Answerer for PolicyAnswerer {
    async fn answer(&self, q: &Query) -> Answer {
        let mut pending = self.start(q);
        let generation = self.state.current();
        let decision = match self.judge(&generation, q, &mut pending) {
            Verdicts::Refused(code, why) => {
                finish(pending, Verdict::Deny, Some(code), Some(why));
                return Answer::Refused;
            }
            Verdicts::Allowed(d) => d,
        };
        match generation.dialer.addresses(&q.name).await {
            Ok(ips) => {
                let list: Vec<String> = ips.iter().map(|ip| ip.to_string()).collect();
                pending.record().dialled = Some(list.join(","));
                finish(pending, decision, None, None);
                Answer::Addrs(ips)
            }
            Err(crate::net::DialError::Refused(refusal)) => {
                finish(pending, Verdict::Deny, Some(refusal.code()), Some(refusal.to_string()));
                Answer::Refused
            }
            Err(e) => {
                let code = e.code();
                finish(pending, decision, Some(code), Some(e.to_string()));
                Answer::NxDomain
            }
        }
    }

    async fn other(&self, q: &Query) -> bool {
        let mut pending = self.start(q);
        match self.judge(&self.state.current(), q, &mut pending) {
            Verdicts::Refused(code, why) => {
                finish(pending, Verdict::Deny, Some(code), Some(why));
                false
            }
            Verdicts::Allowed(d) => {
                finish(pending, d, None, None);
                true
            }
        }
    }
}

/// Serve the responder on `addr` (UDP and TCP) until `shutdown` resolves.
pub async fn serve(
    udp: tokio::net::UdpSocket,
    tcp: tokio::net::TcpListener,
    state: Arc<ProxyState>,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> std::io::Result<()> {
    server::serve(udp, tcp, Arc::new(PolicyAnswerer::new(state)), TTL, shutdown).await
}

/// Bind the responder's UDP and TCP sockets on one address (with port 0, the same free port for both).
pub async fn bind(addr: SocketAddr) -> std::io::Result<(tokio::net::UdpSocket, tokio::net::TcpListener)> {
    if addr.port() != 0 {
        return Ok((
            tokio::net::UdpSocket::bind(addr).await?,
            tokio::net::TcpListener::bind(addr).await?,
        ));
    }
    let mut last = None;
    for _ in 0..16 {
        let udp = tokio::net::UdpSocket::bind(addr).await?;
        match tokio::net::TcpListener::bind(udp.local_addr()?).await {
            Ok(tcp) => return Ok((udp, tcp)),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free port for both UDP and TCP")))
}
