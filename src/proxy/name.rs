//! Step 6 for a DNS query: the name resolved through the address guard, as a dial would resolve it.

use super::exchange::Exchange;
use super::handover::Permit;
use super::input::Outcome;
use crate::dns::Answer;
use crate::error::{ProxyError, Side};
use crate::net::DialError;
use crate::target::Target;

/// Resolve the allowed name: its addresses, every one passed by the guard, or a refusal. A name that is
/// only judged (a record type other than A and AAAA) is answered with no addresses.
pub(super) async fn answer(mut ex: Exchange, target: Target, _decision: Permit, resolve: bool) -> Outcome {
    if !resolve {
        ex.audit.finish();
        return Outcome::Answer(Answer::Addrs(Vec::new()));
    }
    let name = target.host.as_name().unwrap_or_default().to_string();
    let generation = ex.generation.clone();
    let Some(resolved) = ex.fx.resolve(&generation, &name).await else {
        // A dry run resolves nothing.
        return Outcome::Dry;
    };
    match resolved {
        Ok(ips) => {
            let list: Vec<String> = ips.iter().map(|ip| ip.to_string()).collect();
            ex.audit.dialled(list.join(","));
            ex.audit.finish();
            Outcome::Answer(Answer::Addrs(ips))
        }
        // SECURITY: a name that resolves to an address the guard refuses gets no answer at all.
        Err(e @ DialError::Refused(_)) => ex.refuse(ProxyError::Dial(e)),
        // Allowed, but the lookup failed: the sandbox hears the name does not exist.
        Err(e) => {
            let code = e.reason();
            // The lookup failed on the resolver's side.
            ex.audit.refused(false, None, code, Side::Upstream, Some(e.to_string()));
            ex.audit.finish();
            Outcome::Answer(Answer::NxDomain)
        }
    }
}
