//! Protocol: for a request under a rule with a protocol's section (before approval and credentials), the
//! protocol the rule names reads and judges the request, and its verdict is acted on the same way for every
//! protocol: sent, held for a person, refused in the protocol's own words, or refused 400 when cordon cannot
//! read it as the server would. Its section goes in the audit record. Writes `ctx.judged`; reads the request's
//! body whole and puts it back.

use crate::error::ProxyError;
use crate::policy::protocol::Judgement;
use crate::proxy::ctx::{Ctx, slot};
use crate::proxy::effects::Effects;
use crate::proxy::handover::{Asking, Judgements};
use crate::proxy::notes::Note;
use crate::proxy::protocol::PROTOCOLS;
use crate::proxy::protocol::contract::{Context, Protocol};

/// Judge the request by the first protocol of the pipeline's list (`PROTOCOLS`) its rule names, if any.
pub(crate) async fn run(ctx: &mut Ctx, fx: &impl Effects) -> Result<(), ProxyError> {
    judge(ctx, fx, PROTOCOLS).await
}

/// Judge the request by the first of `protocols` its rule names, if any.
pub(crate) async fn judge(
    ctx: &mut Ctx,
    fx: &impl Effects,
    protocols: &[&'static dyn Protocol],
) -> Result<(), ProxyError> {
    let permit = slot(&ctx.permit)?;
    let (policy, index) = (permit.policy.clone(), permit.rule);
    let policy = policy.as_ref();
    let Some((index, rule)) = index.and_then(|i| Some((i, policy?.rules.get(i)?))) else {
        return Ok(());
    };
    let Some(&protocol) = protocols.iter().find(|p| p.governs(rule)) else {
        return Ok(());
    };
    // What a dry run shows: which protocol would judge the messages (live traffic has its record instead).
    fx.note(Note::Protocol {
        name: protocol.name(),
        rule: index,
        does: protocol.explain(),
    });
    let generation = ctx.generation.clone();
    let sandbox = slot(&ctx.sandbox)?;
    let target = slot(&ctx.target)?;
    let req = crate::proxy::ctx::request(&mut ctx.intent)?;
    // Read before anything is refused, so that the refusal is what the client reads.
    let body = fx.body(req).await?;
    let cx = Context {
        memory: fx.memory(),
        body,
        sandbox,
        target,
        policy,
        rule,
        config: &generation.config,
    };
    let judged = protocol.judge(&cx, req).await?;
    if let Some(record) = judged.record {
        ctx.audit.protocol(record);
    }
    let asking = match judged.judgement {
        Judgement::Pass => None,
        Judgement::Ask(asked) => Some(Asking { protocol, asked }),
        Judgement::Invalid(message) => {
            return Err(ProxyError::BadRequest {
                code: protocol.invalid(),
                message,
            });
        }
        Judgement::Refused(refused) => return Err(ProxyError::Protocol(refused)),
    };
    ctx.judged = Judgements {
        asking,
        answer: judged.answer,
    };
    Ok(())
}
