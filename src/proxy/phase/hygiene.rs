//! Hygiene: the destination's name carries no placeholder or secret (it would leave through the resolver); the
//! request is unambiguous: a clean path, one Host that names the tunnel's host, no CONNECT inside an
//! interception. Writes nothing of the context.

use http::Method;

use crate::error::ProxyError;
use crate::proxy::ctx::{Ctx, slot};
use crate::proxy::effects::Effects;
use crate::proxy::headers;
use crate::proxy::input::Intent;
use crate::reason::Reason;
use crate::target::check_path;

/// Refuse a destination name that carries a credential, and what two parsers could read differently, before
/// it is decided.
pub(crate) async fn run(ctx: &mut Ctx, fx: &impl Effects) -> Result<(), ProxyError> {
    let sandbox = slot(&ctx.sandbox)?;
    let target = slot(&ctx.target)?;
    // SECURITY: a placeholder or secret as a DNS label (`<placeholder>.allowed.example`, a CONNECT host, a query
    // to the DNS responder) would leave through the resolver before any rule is asked.
    // Inside an interception, the tunnel's own name was scanned when the tunnel opened.
    let opened =
        matches!(&ctx.intent, Intent::Request { inside: Some(inside), .. } if inside.spellings.has_host(&target.host));
    if let Some(name) = target.host.as_name()
        && !opened
        && let Err(refused) = ctx.generation.credentials.check_name(sandbox, name)
    {
        // The record must not repeat what the name carried.
        ctx.audit.host("[redacted]");
        return Err(refused);
    }
    let Intent::Request { req, inside } = &ctx.intent else {
        return Ok(());
    };
    // SECURITY: two Host headers can be read differently by cordon and the upstream (host confusion).
    let host = headers::single_host(req.headers())?;
    if let Some(inside) = inside {
        // SECURITY: a CONNECT inside an intercepted tunnel would open a second, unpoliced tunnel.
        if req.method() == Method::CONNECT {
            return Err(ProxyError::BadRequest {
                code: Reason::ConnectInTunnel,
                message: "CONNECT inside an intercepted connection is not allowed".into(),
            });
        }
        // SECURITY: host confusion: every request inside an interception must be for the host and port of its
        // CONNECT, by :authority / absolute-form authority and by Host alike.
        let claimed = req
            .uri()
            .authority()
            .map(|a| a.as_str().as_bytes())
            .into_iter()
            .chain(host.map(|h| h.as_bytes()));
        let mut named = false;
        for value in claimed {
            named = true;
            if !inside.spellings.named_by(value) {
                return Err(ProxyError::Misdirected(target.clone()));
            }
        }
        if !named {
            return Err(ProxyError::BadRequest {
                code: Reason::MissingHost,
                message: "the request names no host".into(),
            });
        }
    }
    let path = check_path(req.uri().path()).map_err(ProxyError::from);
    fx.enforce(path)
}
