//! Answer, the last phase of a DNS query: the allowed name resolved through the address guard, as a dial would
//! resolve it: its addresses, every one passed by the guard, or a refusal. A name that is only judged (a
//! record type other than A and AAAA) is answered with no addresses. A dry run resolves nothing. Writes
//! `ctx.ending`.

use crate::dns::DnsAnswer;
use crate::error::{ProxyError, Side};
use crate::net::DialError;
use crate::proxy::ctx::{Ctx, Ended, slot};
use crate::proxy::effects::Effects;
use crate::proxy::input::Intent;

/// Resolve the name, or say why not.
pub(crate) async fn run(ctx: &mut Ctx, fx: &impl Effects) -> Result<(), ProxyError> {
    let Intent::Name { resolve, .. } = ctx.intent else {
        return Err(ProxyError::Internal);
    };
    if !resolve {
        ctx.ending = Some(Ended::Answer(DnsAnswer::Addrs(Vec::new())));
        return Ok(());
    }
    let name = slot(&ctx.target)?.host.as_name().unwrap_or_default().to_string();
    let generation = ctx.generation.clone();
    let Some(resolved) = fx.resolve(&generation, &name).await else {
        ctx.ending = Some(Ended::Dry);
        return Ok(());
    };
    let answer = match resolved {
        Ok(ips) => {
            let list: Vec<String> = ips.iter().map(|ip| ip.to_string()).collect();
            ctx.audit.dialled(list.join(","));
            DnsAnswer::Addrs(ips)
        }
        // SECURITY: a name that resolves to an address the guard refuses gets no answer at all.
        Err(e @ DialError::Refused(_)) => return Err(ProxyError::Dial(e)),
        // Allowed, but the lookup failed: the sandbox hears the name does not exist.
        Err(e) => {
            // The lookup failed on the resolver's side.
            ctx.audit
                .refused(false, None, e.reason(), Side::Upstream, Some(e.to_string()));
            DnsAnswer::NxDomain
        }
    };
    ctx.ending = Some(Ended::Answer(answer));
    Ok(())
}
