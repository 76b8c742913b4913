//! Record, the phase that always runs last: it ends the exchange's one audit record and turns the context into
//! what the entry acts on. A refusal (from any phase) is recorded now and answered (for a DNS query, REFUSED);
//! a response carries its record to the end of its body, a tunnel and a WebSocket to their close, a DNS answer is
//! recorded now. A dry run's refusal is noted by its effects instead, and the run ends with its notes.
//!
//! Unlike the other phases it takes the context by value: nothing runs after it.

use http::Response;
use http_body_util::BodyExt;

use crate::audit::Kind;
use crate::body::{Counted, ProxyBody};
use crate::error::{Format, ProxyError};
use crate::proxy::ctx::{Ctx, Ended};
use crate::proxy::effects::Effects;
use crate::proxy::input::{Intent, Opened, Outcome, TunnelRecord};

/// End the exchange as the phases left it (`ended`: `Err` if one refused or failed).
pub(crate) fn run(mut ctx: Ctx, fx: &impl Effects, ended: Result<(), ProxyError>) -> Outcome {
    let ending = ended.and_then(|()| ctx.ending.take().ok_or(ProxyError::Internal));
    let ending = match ending {
        Ok(ending) => ending,
        Err(e) => return refuse(ctx, fx, &e),
    };
    let mut audit = ctx.audit;
    match ending {
        Ended::Dry => Outcome::Dry,
        Ended::Respond(resp, meter) => {
            audit.status(resp.status().as_u16());
            let down = audit.down_counter();
            let (parts, body) = resp.into_parts();
            let body = Counted::new(body, down, Some(audit))
                .metered(meter, false)
                .boxed_unsync();
            Outcome::Respond(Response::from_parts(parts, body))
        }
        Ended::Upgrade(resp, mut guard) => {
            audit.status(resp.status().as_u16());
            guard.record = Some(TunnelRecord(audit));
            Outcome::Upgrade(resp, guard)
        }
        Ended::Open {
            sandbox,
            target,
            upstream,
            open,
        } => {
            if ctx.kind == Kind::Connect {
                audit.status(200);
            }
            Outcome::Open(Box::new(Opened {
                sandbox,
                target,
                upstream,
                open,
                generation: ctx.generation,
                record: TunnelRecord(audit),
            }))
        }
        Ended::Answer(answer) => {
            audit.finish();
            Outcome::Answer(answer)
        }
    }
}

/// End the exchange with this refusal or failure: its audit record, and the answer for the client.
fn refuse(ctx: Ctx, fx: &impl Effects, err: &ProxyError) -> Outcome {
    // A dry run notes it and ends with its notes.
    if !fx.ends(err) {
        return Outcome::Dry;
    }
    let kind = ctx.kind;
    let resp = record_refusal(ctx, err);
    match kind {
        Kind::Dns => Outcome::Answer(crate::dns::DnsAnswer::Refused),
        _ => Outcome::Respond(resp),
    }
}

/// Fill the record for `err`, emit it (unless counted in an aggregate), and give the response.
fn record_refusal(mut ctx: Ctx, err: &ProxyError) -> Response<ProxyBody> {
    // A person on the preview listener reads a page; a sandbox's client, the refusal, its body as the request's
    // Accept prefers (a tunnel has none to prefer: text, and headers say it all).
    let resp = match &ctx.intent {
        Intent::Visit { .. } => crate::proxy::preview::page(err),
        Intent::Request { req, .. } => err.refusal(&ctx.audit.subject(), Format::of(req.headers())),
        Intent::Tunnel | Intent::Name { .. } => err.refusal(&ctx.audit.subject(), Format::Text),
    };
    // A DNS query has no HTTP answer to record; the detail says what went wrong instead.
    let (status, detail) = match ctx.kind {
        Kind::Dns => (None, Some(err.to_string())),
        _ => (Some(resp.status().as_u16()), err.audit_detail()),
    };
    ctx.audit
        .refused(err.is_refusal(), status, err.reason(), err.side(), detail);
    ctx.audit.finish();
    resp
}
