//! What a protocol is to the pipeline: [`Protocol`] (read, judge, refuse in its own words, show the approver),
//! what it judges with ([`Context`]) and finds ([`Judged`]), and its check of the answer ([`AnswerCheck`]).

use std::sync::Arc;

use bytes::Bytes;
use http::Request;
use http::response::Parts;

use crate::approval::HeldRequest;
use crate::body::ProxyBody;
use crate::error::ProxyError;
use crate::identity::Sandbox;
use crate::policy::protocol::{Asked, Judgement, ProtocolRecord, Refused};
use crate::policy::{Policy, Rule};
use crate::reason::Reason;
use crate::state::ProtocolMemory;
use crate::target::Target;

/// One protocol cordon reads inside requests to the endpoints whose rule has its section.
#[async_trait::async_trait]
pub(crate) trait Protocol: Send + Sync {
    /// Its name: its section of the audit record (`mcp`), and what `explain` calls it.
    fn name(&self) -> &'static str;

    /// What its section of a rule does, as `cordon explain` says it after `rule N`.
    fn explain(&self) -> &'static str;

    /// Whether `rule` has this protocol's section (then every request the rule allows is judged by it).
    fn governs(&self, rule: &Rule) -> bool;

    /// The reason code of a request that is not this protocol, or not as cordon can judge it (answered 400).
    fn invalid(&self) -> Reason;

    /// Judge `req` (its whole body is `cx.body`, read before anything is refused, so the refusal is what the
    /// client reads) against the rule's section. A request that cannot be the protocol may be refused here at
    /// once (an upgrade, a coded body); what is judged comes back as a [`Judged`]. A dry run has no body
    /// (`cx.body` is `None`): nothing that needs it is judged.
    async fn judge(&self, cx: &Context<'_>, req: &mut Request<ProxyBody>) -> Result<Judged, ProxyError>;

    /// A person's refusal of what it asked (`asked`), in the protocol's own words.
    fn refuse(&self, asked: &Asked, reason: Reason, message: String) -> Refused;

    /// What the person deciding on `asked` is shown beyond the request itself (`body` is its whole body): the
    /// MCP tools and their calls, the GraphQL operations.
    fn show(&self, asked: &Asked, body: &Bytes, held: &mut HeldRequest);

    /// Whether a person's refusal of what it asked is answered in the protocol's own words ([`Protocol::refuse`],
    /// status 200, as MCP and GraphQL clients read errors); otherwise as any refusal (403, or 504 when nobody
    /// decided), as the clients of an HTTP API read it.
    fn refuses_in_protocol(&self) -> bool {
        true
    }
}

/// What a protocol judges a request with.
pub(crate) struct Context<'a> {
    /// What the protocols remember across requests (pins, sessions, persisted documents).
    pub(crate) memory: &'a ProtocolMemory,
    /// The request's whole body (`None` in a dry run, which has none).
    pub(crate) body: Option<Bytes>,
    pub(crate) sandbox: &'a Sandbox,
    pub(crate) target: &'a Target,
    /// The policy that allowed the request, and its rule that names the protocol.
    pub(crate) policy: Option<&'a Arc<Policy>>,
    pub(crate) rule: &'a Rule,
    /// The configuration in force (model prices and budgets).
    pub(crate) config: &'a crate::config::Config,
}

/// What a protocol found in a request.
pub(crate) struct Judged {
    /// Its section of the audit record, when it read the request.
    pub(crate) record: Option<ProtocolRecord>,
    /// The verdict.
    pub(crate) judgement: Judgement,
    /// What the answer is checked with, if it is.
    pub(crate) answer: Option<Box<dyn AnswerCheck>>,
}

impl Judged {
    /// Nothing judged, nothing to check: the request goes on as it is.
    pub(crate) fn nothing() -> Judged {
        Judged {
            record: None,
            judgement: Judgement::Pass,
            answer: None,
        }
    }
}

/// An answer's check on its way back, made by a protocol for one request.
#[async_trait::async_trait]
pub(crate) trait AnswerCheck: Send {
    /// The body the sandbox gets for the answer `parts`: checked, filtered, or refused.
    async fn answered(self: Box<Self>, parts: &mut Parts, body: ProxyBody) -> Result<ProxyBody, ProxyError>;
}
