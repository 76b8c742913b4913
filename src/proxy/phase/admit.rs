//! Admit: the sandbox's request rates and byte budget. Everything an identified sandbox sends counts, refused or
//! unreadable alike: a sandbox hammering a denied host, or sending garbage, is still hammering. And the audit
//! output: while records cannot be written, nothing is served (503 `audit_unavailable`). Nothing is counted in
//! a dry run. Writes nothing of the context.

use crate::error::ProxyError;
use crate::proxy::ctx::{Ctx, slot};
use crate::proxy::effects::Effects;

/// Count the exchange against its sandbox's rates, or refuse it.
pub(crate) async fn run(ctx: &mut Ctx, fx: &impl Effects) -> Result<(), ProxyError> {
    let sandbox = slot(&ctx.sandbox)?;
    let target = ctx.parsed.as_ref().and_then(|t| t.as_ref().ok());
    fx.admit(sandbox, target, &ctx.intent)
}
