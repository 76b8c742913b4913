//! Step 6 for a tunnel (a CONNECT, or a transparent TLS connection): its connection caps, then the upstream
//! dialled (`tls: tunnel`) or resolved (intercepted) by the effects, and the record that travels with the tunnel.

use std::sync::Arc;

use crate::audit::Kind;
use crate::identity::Sandbox;
use crate::proxy::exchange::Exchange;
use crate::proxy::handover::Permit;
use crate::proxy::input::{Opened, Outcome, TunnelRecord};
use crate::target::Target;

/// Caps, then dial or resolve: every check before the client hears 200.
pub(crate) async fn open(mut ex: Exchange, sandbox: Arc<Sandbox>, target: Target, decision: Permit) -> Outcome {
    let generation = ex.generation.clone();
    let Some(opened) = ex.fx.open(&generation, &sandbox, &target, decision.tls).await else {
        // A dry run opens nothing: what the guard says and what the CONNECT becomes are noted.
        return Outcome::Dry;
    };
    let dialled = match opened {
        Ok(dialled) => dialled,
        Err(e) => return ex.refuse(e),
    };
    let upstream = match dialled.stream {
        Some((stream, addr)) => {
            ex.audit.dialled(addr.to_string());
            Some(stream)
        }
        None => {
            if let Some(original) = ex.original_dst {
                // Say whether the sandbox aimed somewhere cordon would not go.
                ex.audit.original_dst_differs(!dialled.resolved.contains(&original.0));
            }
            None
        }
    };
    if ex.kind == Kind::Connect {
        ex.audit.status(200);
    }
    Outcome::Open(Box::new(Opened {
        sandbox,
        target,
        upstream,
        open: dialled.open,
        generation: ex.generation,
        record: TunnelRecord(ex.audit),
    }))
}
