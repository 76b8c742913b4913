//! The DNS responder for sandboxes in transparent mode: A and AAAA answers only for names the sandbox's
//! policy names, taken from cordon's own resolver and guard, everything else refused and audited; each
//! query goes through the pipeline.
//!
//! A sandbox that can ask any name can leak data in the names it asks (`secret.attacker.example`), even
//! if it can connect nowhere; this answers only names a rule allows, so such a query never leaves.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::addr::ClientAddr;
use crate::audit::Kind;
use crate::dns::{Answerer, DnsAnswer, Query};
use crate::error::ProxyError;
use crate::proxy::{self, Claim, Input, Intent, Outcome};
use crate::reason::Reason;
use crate::state::ProxyState;
use crate::target::Target;

/// How long clients may cache an answer. Short: the policy can change with a reload.
pub(crate) const TTL: u32 = 30;

/// Hands each query to the pipeline: the sandbox by source address, the name as the one target parser
/// reads it, the rates, the guard and the policy; then the answer.
pub(crate) struct PolicyAnswerer {
    state: Arc<ProxyState>,
}

impl PolicyAnswerer {
    /// An answerer over `state`.
    pub(crate) fn new(state: Arc<ProxyState>) -> PolicyAnswerer {
        PolicyAnswerer { state }
    }

    fn input(q: &Query, resolve: bool) -> Input {
        // SECURITY: the name goes through target.rs like every host: a query for something that parses as an
        // address (`169.254.169.254.`) is not a name and is refused, never looked up.
        let target = match Target::from_host_value(q.name.as_bytes(), 53) {
            Ok(t) if t.host.as_name() == Some(q.name.as_str()) => Ok(t),
            _ => Err(ProxyError::BadRequest {
                code: Reason::BadHost,
                message: format!("{:?} is not a host name", q.name),
            }),
        };
        Input {
            kind: Kind::Dns,
            client: ClientAddr(q.src),
            original_dst: None,
            conn: None,
            // SECURITY: an address no sandbox claims gets no answers at all.
            claim: Claim::Source,
            target,
            intent: Intent::Name {
                name: q.name.clone(),
                qtype: q.qtype.clone(),
                resolve,
            },
        }
    }
}

impl Answerer for PolicyAnswerer {
    async fn answer(&self, q: &Query) -> DnsAnswer {
        match proxy::run(&self.state, PolicyAnswerer::input(q, true)).await {
            Outcome::Answer(answer) => answer,
            _ => DnsAnswer::Refused,
        }
    }

    async fn refused(&self, q: &Query, reason: Reason) {
        let mut input = PolicyAnswerer::input(q, false);
        input.target = Err(ProxyError::BadRequest {
            code: reason,
            message: format!("a DNS query cordon does not answer ({} {:?})", q.qtype, q.name),
        });
        let _ = proxy::run(&self.state, input).await;
    }

    async fn other(&self, q: &Query) -> bool {
        matches!(
            proxy::run(&self.state, PolicyAnswerer::input(q, false)).await,
            Outcome::Answer(DnsAnswer::Addrs(_))
        )
    }
}

/// Serve the responder on `addr` (UDP and TCP) until `shutdown` resolves.
pub async fn serve(
    udp: tokio::net::UdpSocket,
    tcp: tokio::net::TcpListener,
    state: Arc<ProxyState>,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> std::io::Result<()> {
    crate::dns::server::serve(udp, tcp, Arc::new(PolicyAnswerer::new(state)), TTL, shutdown).await
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
