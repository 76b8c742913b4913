//! Approve: for a rule with `action: ask`, or what its protocol's section asks for (MCP tools, GraphQL
//! operations), the request is held until a person decides (or a standing grant covers it), shown whole before
//! any credential is attached, so nothing secret is ever shown to the approver. A person's refusal of what a
//! protocol asked is said in the protocol's words. Writes nothing of the context; reads the request's body
//! whole and puts it back.

use std::time::Duration;

use crate::approval::{self, Resolution};
use crate::audit::ApprovalRecord;
use crate::error::ProxyError;
use crate::limits::LimitRefusal;
use crate::policy::Action;
use crate::proxy::ctx::{Ctx, slot};
use crate::proxy::effects::Effects;

/// Hold the request for a person if its rule or its protocol asks for one.
pub(crate) async fn run(ctx: &mut Ctx, fx: &impl Effects) -> Result<(), ProxyError> {
    let asked = hold(ctx, fx).await;
    asked.map_err(|e| ctx.judged.refusal(e))
}

async fn hold(ctx: &mut Ctx, fx: &impl Effects) -> Result<(), ProxyError> {
    let permit = slot(&ctx.permit)?;
    let held = ctx.judged.asking.is_some();
    let Some(index) = permit.rule.filter(|_| permit.action == Action::Ask || held) else {
        return Ok(());
    };
    let policy = permit.policy.clone();
    let Some(rule) = policy.as_ref().and_then(|p| p.rules.get(index)) else {
        return Err(ProxyError::Internal);
    };
    let sandbox = slot(&ctx.sandbox)?;
    let target = slot(&ctx.target)?;
    let timeout = ctx.generation.config.approval.timeout;
    let req = crate::proxy::ctx::request(&mut ctx.intent)?;
    // The approver sees the whole body's length and digest, and an `exact` grant matches on them: the body is
    // read whole first (bounded, as a scanned body is). A dry run has none, and asks no one.
    let body = fx.body(req).await?.unwrap_or_default();
    let ask = crate::proxy::ask::ask(sandbox, target, req, &body, index, rule, ctx.judged.asking.as_ref());
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    // A dry run asks no one: it notes that the request would wait.
    let Some(resolution) = fx.ask(index, ask).await else {
        return Ok(());
    };
    let (record, result) = match resolution {
        Resolution::Allowed { id, decision, waited } => {
            (approval_record(id, "allow", Some(&decision), ms(waited)), Ok(()))
        }
        Resolution::Granted { grant } => (approval_record(grant, "granted", None, 0), Ok(())),
        Resolution::Denied { id, decision, waited } => (
            approval_record(id.clone(), "deny", Some(&decision), ms(waited)),
            Err(ProxyError::ApprovalDenied { id, by: decision.by }),
        ),
        Resolution::TimedOut { id, waited } => (
            approval_record(id.clone(), "timeout", None, ms(waited)),
            Err(ProxyError::ApprovalTimedOut(timeout, id)),
        ),
        Resolution::Full => (
            approval_record(String::new(), "queue_full", None, 0),
            Err(ProxyError::ApprovalQueueFull),
        ),
        Resolution::Limited { over, max, retry_after } => {
            let (reason, whose, setting) = match over {
                approval::Over::Sandbox => (
                    LimitRefusal::APPROVAL_SANDBOX_LIMIT,
                    "this sandbox",
                    "approval.max_pending_per_sandbox",
                ),
                approval::Over::User => (
                    LimitRefusal::APPROVAL_USER_LIMIT,
                    "this sandbox's user",
                    "approval.max_pending_per_user",
                ),
            };
            (
                approval_record(String::new(), reason.code(), None, 0),
                Err(ProxyError::Limited(LimitRefusal {
                    reason,
                    // Whole seconds, rounded up: a slot is free by then.
                    retry_after: Duration::from_secs(retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0)),
                    message: format!("{max} requests of {whose} already wait for approval ({setting})"),
                })),
            )
        }
    };
    ctx.audit.approval(record);
    result
}

fn approval_record(
    id: String,
    outcome: &str,
    decision: Option<&approval::HumanDecision>,
    waited_ms: u64,
) -> ApprovalRecord {
    ApprovalRecord {
        id,
        outcome: outcome.to_string(),
        by: decision.map(|d| d.by.clone()),
        scope: decision.map(|d| d.scope.as_str().to_owned()),
        waited_ms,
    }
}
