//! What one phase hands the next: the decision's [`Permit`] (everything later phases need of the policy, so none
//! looks a rule up again), the protocol phase's [`Judgements`] (what a person must allow, how the answer is
//! checked) and the credentials phase's [`Reply`] (what the response phase needs to keep the sandbox's secrets
//! in).

use std::sync::Arc;

use super::protocol::contract::{AnswerCheck, Protocol};
use crate::error::ProxyError;
use crate::leak::mask::masker::Masker;
use crate::limits::Meter;
use crate::policy::protocol::Asked;
use crate::policy::{Action, Policy, TlsMode};

/// What the policy decided, with everything later steps need.
#[derive(Debug, Clone, Default)]
pub(crate) struct Permit {
    /// The allowing rule (`None` when only report mode let it through).
    pub(crate) rule: Option<usize>,
    /// What happens to TLS after a CONNECT: intercepted or tunnelled.
    pub(crate) tls: TlsMode,
    /// Whether the request goes at once or waits for a human.
    pub(crate) action: Action,
    /// The credentials of the policy that may be applied to this request: bound to its destination,
    /// method and path, and only inside an interception (never over cleartext).
    pub(crate) credentials: Vec<crate::names::CredentialName>,
    /// The policy's `mask_echo` credentials bound to the destination's host: their secrets are masked in
    /// whatever comes back.
    pub(crate) masked: Vec<crate::names::CredentialName>,
    /// The policy that decided. The later steps (the approver's view of the rule, the credentials applied,
    /// the masking) use it and never look the sandbox's policy up again, so a PATCH of the sandbox's policy
    /// while the request waits cannot mix two policies in one request.
    pub(crate) policy: Option<Arc<Policy>>,
}

/// What the response step needs to keep the sandbox's secrets in, handed over by the credentials step.
#[derive(Default)]
pub(crate) struct Reply {
    /// Counts a plain HTTP response body against the sandbox's byte budget.
    pub(crate) meter: Option<Arc<dyn Meter>>,
    /// Masks the secrets of the destination's `mask_echo` credentials in what comes back.
    pub(crate) masker: Option<Arc<Masker>>,
    /// The request was signed with AWS keys: key material is masked in what comes back.
    pub(crate) aws_keys: bool,
    /// A GitHub or OAuth2 minting call was let through: its answer's tokens are masked.
    pub(crate) tokens: bool,
}

/// What a person must allow first: the protocol that asks, and what it asks.
pub(crate) struct Asking {
    pub(crate) protocol: &'static dyn Protocol,
    pub(crate) asked: Asked,
}

/// What the protocol phase hands on.
#[derive(Default)]
pub(crate) struct Judgements {
    /// What a person must allow first, if anything.
    pub(crate) asking: Option<Asking>,
    /// What the answer is checked and filtered with.
    pub(crate) answer: Option<Box<dyn AnswerCheck>>,
}

impl Judgements {
    /// A person's refusal of what the protocol asked, as its client understands it (a JSON-RPC error, a GraphQL
    /// error), not an HTTP status; any other error as it is.
    pub(crate) fn refusal(&self, e: ProxyError) -> ProxyError {
        match (&self.asking, e) {
            (Some(a), e @ (ProxyError::ApprovalDenied { .. } | ProxyError::ApprovalTimedOut(..)))
                if a.protocol.refuses_in_protocol() =>
            {
                ProxyError::Protocol(a.protocol.refuse(&a.asked, e.reason().in_protocol(), e.to_string()))
            }
            (_, e) => e,
        }
    }
}

/// Which preview a person asks for and with what: the visitor phase's finding.
pub(crate) struct Visit {
    /// The preview's port, and the sandbox its name names.
    pub(crate) port: u16,
    pub(crate) id: crate::names::SandboxId,
    /// Its host as cordon spells it (`PORT-SANDBOX.DOMAIN`): a dev server's cookies may name no other.
    pub(crate) own: String,
    /// Its host as the request named it (`Host`), which its origin must match.
    pub(crate) name: String,
    /// The link (opening the preview) or the session the request carries, checked.
    pub(crate) claims: crate::preview::Claims,
    /// The link is being opened (`/.cordon/preview?t=LINK`): a session is made, nothing is forwarded.
    pub(crate) opening: bool,
    /// The previews' configuration and signer, as the listener has them.
    pub(crate) previews: Arc<crate::preview::Previews>,
}

/// Where a preview goes once the exposed phase found it still open: the sandbox's dev server.
pub(crate) struct DevServer {
    /// The sandbox's own address, at the preview's port (passed by the address guard).
    pub(crate) at: std::net::SocketAddr,
}
