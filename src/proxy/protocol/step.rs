//! Step 6's protocol part, for a request under a rule with a protocol's section (before approval and
//! credentials): the protocol the rule names reads and judges the request, and its verdict is acted on the same
//! way for every protocol: sent, held for a person, refused in the protocol's own words, or refused 400 when
//! cordon cannot read it as the server would. Its section goes in the audit record.

use http::Request;

use super::contract::{Answer, Context, Protocol};
use crate::body::ProxyBody;
use crate::error::ProxyError;
use crate::identity::Sandbox;
use crate::policy::protocol::{Asked, Judgement};
use crate::proxy::checks::Permit;
use crate::proxy::exchange::Exchange;
use crate::proxy::notes::Note;
use crate::target::Target;

/// What a person must allow first: the protocol that asks, and what it asks.
pub(crate) struct Asking {
    pub(crate) protocol: &'static dyn Protocol,
    pub(crate) asked: Asked,
}

/// What the protocol step hands on.
#[derive(Default)]
pub(crate) struct Judgements {
    /// What a person must allow first, if anything.
    pub(crate) asking: Option<Asking>,
    /// What the answer is checked and filtered with.
    pub(crate) answer: Option<Box<dyn Answer>>,
}

impl Judgements {
    /// A person's refusal of what the protocol asked, as its client understands it (a JSON-RPC error, a GraphQL
    /// error), not an HTTP status; any other error as it is.
    pub(crate) fn refusal(&self, e: ProxyError) -> ProxyError {
        match (&self.asking, e) {
            (Some(a), e @ (ProxyError::ApprovalDenied { .. } | ProxyError::ApprovalTimedOut(..))) => {
                ProxyError::Protocol(a.protocol.refuse(&a.asked, e.reason().in_protocol(), e.to_string()))
            }
            (_, e) => e,
        }
    }
}

impl Exchange {
    /// Judge `req` by the first of `protocols` its rule names (the pipeline's are `super::PROTOCOLS`), if any.
    pub(crate) async fn protocols(
        &mut self,
        protocols: &[&'static dyn Protocol],
        sandbox: &Sandbox,
        target: &Target,
        decision: &Permit,
        req: &mut Request<ProxyBody>,
    ) -> Result<Judgements, ProxyError> {
        let policy = decision.policy.as_ref();
        let Some((index, rule)) = decision.rule.and_then(|i| Some((i, policy?.rules.get(i)?))) else {
            return Ok(Judgements::default());
        };
        let Some(&protocol) = protocols.iter().find(|p| p.governs(rule)) else {
            return Ok(Judgements::default());
        };
        if self.state().is_none() {
            // A dry run has no body: its note says what would be judged.
            self.note(Note::Protocol {
                name: protocol.name(),
                rule: index,
                does: protocol.explain(),
            });
        }
        let cx = Context {
            state: self.state(),
            sandbox,
            target,
            policy,
            rule,
        };
        let judged = protocol.judge(&cx, req).await?;
        if let Some(record) = judged.record {
            self.audit.protocol(record);
        }
        match judged.judgement {
            Judgement::Pass => Ok(Judgements {
                asking: None,
                answer: judged.answer,
            }),
            Judgement::Ask(asked) => Ok(Judgements {
                asking: Some(Asking { protocol, asked }),
                answer: judged.answer,
            }),
            Judgement::Invalid(message) => Err(ProxyError::BadRequest {
                code: protocol.invalid(),
                message,
            }),
            Judgement::Refused(refused) => Err(ProxyError::Protocol(refused)),
        }
    }
}
