//! Step 6 for a tunnel (a CONNECT, or a transparent TLS connection): its connection caps, then the upstream
//! dialled (`tls: tunnel`) or resolved (intercepted), and the record that travels with the tunnel.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use tokio::net::TcpStream;

use super::Outcome;
use super::checks::Decision;
use super::dry::Note;
use super::exchange::Exchange;
use crate::audit::{self, Kind};
use crate::error::{ProxyError, TunnelEnd};
use crate::identity::Sandbox;
use crate::limits::OpenGuard;
use crate::policy::TlsMode;
use crate::session::admission;
use crate::state::Generation;
use crate::target::Target;

/// A tunnel the pipeline allowed, for its entry to run.
pub(crate) struct Opened {
    /// Whose tunnel.
    pub(crate) sandbox: Arc<Sandbox>,
    /// To where.
    pub(crate) target: Target,
    /// The dialled upstream for a `tls: tunnel` rule (bytes pass through); `None` to intercept.
    pub(crate) upstream: Option<TcpStream>,
    /// The tunnel's slot under the sandbox's and user's open caps, held while it is open.
    pub(crate) open: OpenGuard,
    /// The configuration it was allowed under (its timeouts bound it).
    pub(crate) generation: Arc<Generation>,
    /// Its audit record, written when it ends.
    pub(crate) record: TunnelRecord,
}

/// A tunnel's audit record: its bytes are counted into it while it is open, and it is written once, when
/// the tunnel ends (or is dropped).
pub(crate) struct TunnelRecord(audit::Pending);

impl TunnelRecord {
    /// The counters of bytes from and to the client.
    pub(crate) fn counters(&self) -> (Arc<AtomicU64>, Arc<AtomicU64>) {
        (self.0.up_counter(), self.0.down_counter())
    }

    /// The tunnel ended: cleanly (`None`), or so.
    pub(crate) fn end(mut self, how: Option<&TunnelEnd>) {
        if let Some(how) = how {
            self.0.ended(how);
        }
        self.0.finish();
    }
}

/// Caps, then dial or resolve: every check before the client hears 200.
pub(super) async fn open(mut ex: Exchange, sandbox: Arc<Sandbox>, target: Target, decision: Decision) -> Outcome {
    let Some(state) = ex.state().cloned() else {
        ex.dry_guard(&target).await;
        return Outcome::Dry;
    };
    let opened = async {
        // A tunnel is a connection of the sandbox: its rate and the open caps apply before the 200.
        let open = admission::tunnel(&state.limits(), &sandbox).map_err(ProxyError::Limited)?;
        let upstream = match decision.tls {
            TlsMode::Tunnel => {
                let (stream, addr) = ex.generation.dialer.dial(&target).await?;
                ex.audit.dialled(addr.to_string());
                Some(stream)
            }
            TlsMode::Intercept => {
                // Refuse now rather than after the TLS handshake; the pool checks again when it dials.
                let resolved = ex.generation.dialer.resolve(&target).await?;
                if let Some(original) = ex.original_dst {
                    // Say whether the sandbox aimed somewhere cordon would not go.
                    ex.audit.original_dst_differs(!resolved.contains(&original.0));
                }
                None
            }
        };
        Ok::<_, ProxyError>((open, upstream))
    }
    .await;
    let (open, upstream) = match opened {
        Ok(opened) => opened,
        Err(e) => return ex.refuse(e),
    };
    if ex.kind == Kind::Connect {
        ex.audit.status(200);
    }
    Outcome::Open(Box::new(Opened {
        sandbox,
        target,
        upstream,
        open,
        generation: ex.generation,
        record: TunnelRecord(ex.audit),
    }))
}

impl Exchange {
    /// A dry run's view of the address guard: every address the destination resolves to, and whether it
    /// may be dialled.
    pub(super) async fn dry_guard(&mut self, target: &Target) {
        match self.generation.dialer.explain(target).await {
            Ok(res) if res.addrs.is_empty() => self.note(Note::NoAddress(target.host.to_string())),
            Ok(res) => {
                for (addr, verdict) in res.addrs {
                    let refusal = verdict.err().map(|r| (r.code(), r.to_string()));
                    self.note(Note::Address(addr, refusal));
                }
            }
            Err(e) => self.note(Note::Unresolved(e.code(), e.to_string())),
        }
    }
}
