//! Step 6 for a tunnel (a CONNECT, or a transparent TLS connection): its connection caps, then the upstream
//! dialled (`tls: tunnel`) or resolved (intercepted), and the record that travels with the tunnel.

use std::sync::Arc;

use crate::audit::Kind;
use crate::error::ProxyError;
use crate::identity::Sandbox;
use crate::net::DialError;
use crate::policy::TlsMode;
use crate::proxy::checks::Permit;
use crate::proxy::dry::{DryRefusal, Note};
use crate::proxy::exchange::Exchange;
use crate::proxy::input::{Opened, Outcome, TunnelRecord};
use crate::session::admission;
use crate::target::Target;

/// Caps, then dial or resolve: every check before the client hears 200.
pub(crate) async fn open(mut ex: Exchange, sandbox: Arc<Sandbox>, target: Target, decision: Permit) -> Outcome {
    let Some(state) = ex.state().cloned() else {
        ex.dry_guard(&target).await;
        // What the CONNECT becomes, once open (a refused one becomes nothing).
        if !ex.dry_refused() {
            ex.note(Note::Tunnel(decision.tls));
        }
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
    pub(crate) async fn dry_guard(&mut self, target: &Target) {
        match self.generation.dialer.explain(target).await {
            Ok(res) if res.addrs.is_empty() => {
                let e = ProxyError::Dial(DialError::NoAddress { target: target.clone() });
                self.note(Note::NoAddress(target.host.to_string(), DryRefusal::of(&e)));
            }
            Ok(res) => {
                for (addr, verdict) in res.addrs {
                    let refusal = verdict
                        .err()
                        .map(|r| DryRefusal::of(&ProxyError::Dial(DialError::Refused(r))));
                    self.note(Note::Address(addr, refusal));
                }
            }
            Err(e) => self.note(Note::Unresolved(DryRefusal::of(&ProxyError::Dial(e)))),
        }
    }
}
