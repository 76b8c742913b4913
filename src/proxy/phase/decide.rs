//! Decide: what the sandbox's policy permits, asked once. The [`Permit`] carries what later phases need (the
//! rule, its TLS mode and action, the credentials usable, the policy itself), so nothing looks a rule up again.
//! A refusal is recorded by the record phase; what is allowed is recorded here. Writes `ctx.permit`.

use crate::error::ProxyError;
use crate::policy::{Action, Decision, DenyReason, Mode, Policy, Question, TlsMode};
use crate::proxy::ctx::{Ctx, slot};
use crate::proxy::effects::Effects;
use crate::proxy::handover::Permit;
use crate::proxy::input::Intent;
use crate::proxy::notes::{DryRefusal, Note};
use crate::target::Target;

/// Ask the policy, note and record what it said, and hand on what it permits.
pub(crate) async fn run(ctx: &mut Ctx, fx: &impl Effects) -> Result<(), ProxyError> {
    let sandbox = slot(&ctx.sandbox)?;
    let target = slot(&ctx.target)?;
    let generation = ctx.generation.clone();
    // Validation guarantees the policy exists; if it somehow does not, nothing is allowed.
    let Some(policy) = fx.policy_for(&generation, sandbox) else {
        return Err(ProxyError::Denied {
            reason: DenyReason::NoRule,
            target: target.clone(),
        });
    };
    let ask = &ctx.intent;
    let (method, path) = match ask {
        Intent::Request { req, .. } => (Some(req.method()), Some(req.uri().path())),
        Intent::Tunnel | Intent::Name { .. } => (None, None),
        // A preview is decided by the exposed phase; decide never sees one.
        Intent::Visit { .. } => return Err(ProxyError::Internal),
    };
    let decided = match ask {
        Intent::Name { .. } => decide_name(&ctx.generation, &policy, target)?,
        _ => policy.decide(Question {
            target,
            request: method.zip(path),
            intercepted: matches!(ask, Intent::Request { inside: Some(_), .. }),
        }),
    };
    let denied = (!decided.allowed).then(|| ProxyError::Denied {
        reason: decided.deny.clone().unwrap_or(DenyReason::NoRule),
        target: target.clone(),
    });
    fx.note(Note::Decided {
        rule: decided.rule,
        deny: decided.deny.clone().map(|d| {
            let why = d.describe(target);
            (d, why)
        }),
        mode: policy.mode,
        refused: denied.as_ref().map(DryRefusal::of),
    });
    // A dry run goes on past a denial (noted above, with the answer live traffic gets), to show what the later
    // phases say too.
    if let Some(denied) = denied {
        fx.denied(denied)?;
    }
    ctx.audit
        .allowed(decided.rule, decided.deny.as_ref().map(DenyReason::reason));
    let rule = decided.rule.and_then(|i| policy.rules.get(i));
    let (credentials, masked) = match (ask, method, path) {
        (Intent::Request { inside, .. }, Some(method), Some(path)) => (
            generation
                .credentials
                .usable(&policy, target, method, path, inside.is_some()),
            generation.credentials.masked(&policy, target),
        ),
        _ => (Vec::new(), Vec::new()),
    };
    let tls = rule.map(|r| r.tls).unwrap_or_default();
    let mut action = rule.map(|r| r.action).unwrap_or_default();
    // SECURITY: a sandbox held for violations (on_violation: hold): every request waits for a person, and a
    // tunnel cordon cannot look into is refused (there would be no request to ask about).
    if fx.held(sandbox) {
        match ask {
            Intent::Request { .. } => action = Action::Ask,
            Intent::Tunnel if tls == TlsMode::Tunnel => return Err(ProxyError::Held),
            Intent::Tunnel | Intent::Name { .. } | Intent::Visit { .. } => {}
        }
    }
    ctx.permit = Some(Permit {
        rule: decided.rule,
        tls,
        action,
        credentials,
        masked,
        policy: Some(policy),
    });
    Ok(())
}

/// A DNS name: metadata and local names are refused whatever the policy says; then any rule that names the host
/// (at any port) allows it.
fn decide_name(
    generation: &crate::generation::Generation,
    policy: &Policy,
    target: &Target,
) -> Result<Decision, ProxyError> {
    let name = target.host.as_name().unwrap_or_default();
    // SECURITY: metadata and local names are refused whatever the policy says.
    generation
        .dialer
        .guard()
        .check_name(name)
        .map_err(|r| ProxyError::Dial(crate::net::DialError::Refused(r)))?;
    // SECURITY: DNS exfiltration: a name no rule allows is never looked up, so the query stops here.
    let named = policy.names_host(name);
    Ok(Decision {
        allowed: named || policy.mode == Mode::Report,
        rule: None,
        deny: (!named).then_some(DenyReason::NoRule),
    })
}
