//! Every way a request can fail, and the one mapping from failure to reason code and body; the HTTP status is
//! the reason's, from the registry (`src/reason/codes.rs`), for every failure and for the raw answers below hyper.
//!
//! 407 asks "who are you?", 403 says "not allowed", 429 "too much", 502/504 "upstream trouble". Bodies are
//! short and name what was refused; they never carry internal detail, tokens or secrets (the audit record
//! carries the detail).

use http::{Response, StatusCode};

use crate::body::{self, ProxyBody};
use crate::identity::AuthFailure;
use crate::net::DialError;
use crate::policy::DenyReason;
use crate::reason::{Answer, Reason};
use crate::target::{Target, TargetError};
pub(crate) use refusal::{Format, Subject};

mod raw;
pub(crate) mod refusal;
mod side;
mod tunnel_end;
pub(crate) use raw::{
    framing_status, hyper_parse_reason, hyper_parse_status, render_framing, render_overloaded,
    render_unauthenticated_limit,
};
pub(crate) use side::Side;
pub(crate) use tunnel_end::TunnelEnd;

/// The response header carrying the machine-readable reason of a refusal.
pub(crate) const REASON_HEADER: &str = "x-cordon-reason";

/// Why cordon did not (fully) serve a request.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProxyError {
    /// No, malformed or wrong proxy credentials.
    #[error("proxy authentication required: {0}")]
    Auth(AuthFailure),
    /// The destination could not be parsed.
    #[error("bad request target: {0}")]
    Target(#[from] TargetError),
    /// An origin-form request reached the proxy port.
    #[error("this is an HTTP proxy: send requests in absolute form (set HTTP_PROXY) or use CONNECT")]
    NotProxyRequest,
    /// The request's headers are malformed or ambiguous.
    #[error("malformed request: {message}")]
    BadRequest {
        /// Stable reason code.
        code: Reason,
        /// What is wrong.
        message: String,
    },
    /// The policy has no rule for this.
    #[error("denied: {}", reason.describe(target))]
    Denied {
        /// Which check failed.
        reason: DenyReason,
        /// The destination.
        target: Target,
    },
    /// Resolution, the address guard or the connection failed.
    #[error("{0}")]
    Dial(#[from] DialError),
    /// An intercepted request names another host than its CONNECT.
    #[error("this connection is for {0}; send requests for other hosts through their own CONNECT")]
    Misdirected(Target),
    /// A signature the sandbox made is not what its credential takes (AWS: wrong key, altered, expired).
    #[error("refused: {message}")]
    Signature {
        /// Stable reason code.
        code: Reason,
        /// What is wrong.
        message: String,
    },
    /// A placeholder was sent where its credential is not bound (or by another sandbox).
    #[error("refused: the request carries a placeholder of credential {credential:?} ({why})")]
    Exfiltration {
        /// The credential's name (never its value).
        credential: crate::names::CredentialName,
        /// Why it is out of place.
        why: String,
    },
    /// A call that would mint a credential the sandbox keeps (new AWS keys, a GitHub token, an OAuth2 token),
    /// through a credential whose `allow_minting` does not name it.
    #[error(
        "refused: {call} makes a new credential the sandbox could keep, or gives someone lasting access without cordon; credential {credential:?} does not allow it (allow_minting)"
    )]
    Minting {
        /// The credential's name.
        credential: crate::names::CredentialName,
        /// The call, as `allow_minting` names it.
        call: String,
    },
    /// A real secret was sent where its credential is not bound.
    #[error("refused: the request carries the secret of credential {credential:?}, which may not go here")]
    SecretExfiltration {
        /// The credential's name (never its value).
        credential: crate::names::CredentialName,
    },
    /// The upstream's response is in a content coding cordon cannot read, toward a destination whose secrets
    /// it must mask.
    #[error("the upstream answered in a content coding cordon cannot read: {0}")]
    UpstreamEncoding(String),
    /// A body to a destination whose placeholder may be in it is too large to scan.
    #[error("the request body is larger than {limit} bytes, the most cordon scans for placeholders")]
    PayloadTooLarge {
        /// The limit.
        limit: usize,
    },
    /// A credential's secret could not be had right now.
    #[error("credential {credential:?} is unavailable; try again shortly")]
    CredentialUnavailable {
        /// The credential's name.
        credential: crate::names::CredentialName,
        /// Why (for the audit record and logs; never sent to the sandbox, never a secret).
        detail: String,
    },
    /// The upstream's certificate did not verify.
    #[error("the upstream certificate was not trusted")]
    UpstreamCertificate(String),
    /// The upstream failed after the connection was made.
    #[error("the upstream failed: {0}")]
    Upstream(String),
    /// A rate, cap or byte budget of the sandbox, its user or the source address is exhausted.
    #[error("{}; retry after {}s", .0.message, .0.retry_after.as_secs())]
    Limited(crate::limits::LimitRefusal),
    /// The TLS handshake with the upstream took longer than `timeouts.tls_handshake`.
    #[error("the TLS handshake with the upstream timed out")]
    HandshakeTimeout,
    /// A message to an MCP or GraphQL endpoint (any protocol cordon judges) its rule refuses: answered 200 in
    /// the protocol's own words (a JSON-RPC error, a GraphQL error), as its clients understand it.
    #[error("{}", .0.message)]
    Protocol(crate::policy::protocol::Refused),
    /// An `Mcp-Session-Id` bound to another sandbox.
    #[error("this MCP session belongs to another sandbox; start a session of your own (initialize)")]
    McpSessionForeign,
    /// An MCP endpoint's answer cordon will not pass on: a redirect out of the server's pins or rules, a body it
    /// cannot read with certainty where a tool list could be.
    #[error("the MCP server's answer was refused: {message}")]
    McpAnswer {
        /// Stable reason code.
        code: Reason,
        /// What is wrong.
        message: String,
    },
    /// A human denied the request (`action: ask`).
    #[error("denied by {by} (approval {id})")]
    ApprovalDenied {
        /// The approval.
        id: String,
        /// Who decided.
        by: String,
    },
    /// Nobody decided within `approval.timeout`.
    #[error("approval timed out: nobody allowed this request within {0:?} (approval {1})")]
    ApprovalTimedOut(std::time::Duration, String),
    /// Too many requests are already waiting for approval.
    #[error("too many requests are waiting for approval; try again later")]
    ApprovalQueueFull,
    /// The upstream did not send a response head in time.
    #[error("the upstream did not answer in time")]
    UpstreamTimeout,
    /// A transparent connection or DNS query from an address no sandbox's `source_cidrs` hold.
    #[error("no sandbox's source_cidrs hold {0}")]
    UnknownSource(std::net::IpAddr),
    /// A tunnel of a sandbox held for violations: there would be no request to ask a person about.
    #[error(
        "this sandbox is held for violations: every request needs approval, and a tunnel cordon cannot look into is refused"
    )]
    Held,
    /// Audit records cannot be written (the disk failed or is full): nothing is served unrecorded.
    #[error("cordon cannot write its audit records right now, so it serves nothing; try again later")]
    AuditUnavailable,
    /// A person's request on the preview listener that is not forwarded: a name, link, session or origin
    /// refused, a preview no longer open, or a dev server that did not answer (answered with a page).
    #[error("{message}")]
    Preview {
        /// Stable reason code (one of the registry's previews).
        code: Reason,
        /// What the person is told.
        message: String,
    },
    /// The sandbox's own request to cordon for access (at `access.cordon.internal`) refused: not offered, not
    /// readable, past the boundary, too often, unknown, or not by plain HTTP.
    #[error("{message}")]
    Access {
        /// Stable reason code (one of the registry's access requests).
        code: Reason,
        /// What the sandbox is told.
        message: String,
        /// Each problem, at its path, or each way the request goes past the boundary.
        details: Vec<String>,
    },
    /// A request to a model API refused before it leaves: a model the rule does not list, a model the price
    /// table cannot count under a cost budget, or a budget cordon cannot read.
    #[error("{message}")]
    Model {
        /// Stable reason code (one of the registry's model APIs).
        code: Reason,
        /// What the sandbox is told.
        message: String,
    },
    /// cordon itself went wrong (an entry handed the pipeline something it does not handle).
    #[error("internal error")]
    Internal,
}

impl ProxyError {
    /// The HTTP status this failure is answered with: its reason's answer in the registry, and nothing else (the
    /// variant only says which reason). The DNS responder's refusals are recorded through the pipeline as a
    /// `BadRequest` with a DNS reason, whose response is never sent (the query gets its DNS answer); any other
    /// reason whose answer is not an HTTP response (a close code, a closed connection, a record) has no business
    /// in a `ProxyError`: a test holds every variant to it, and should one slip through it is answered 500.
    pub(crate) fn status(&self) -> StatusCode {
        status_of(self.reason())
    }

    /// Stable machine-readable reason, as in the audit record and the `x-cordon-reason` header.
    pub(crate) fn reason(&self) -> Reason {
        match self {
            ProxyError::Auth(a) => a.reason(),
            ProxyError::Target(t) => t.reason(),
            ProxyError::NotProxyRequest => Reason::NotProxyRequest,
            ProxyError::BadRequest { code, .. } | ProxyError::Signature { code, .. } => *code,
            ProxyError::Denied { reason, .. } => reason.reason(),
            ProxyError::Dial(d) => d.reason(),
            ProxyError::Misdirected(_) => Reason::Misdirected,
            ProxyError::Exfiltration { .. } => Reason::CredentialExfiltration,
            ProxyError::SecretExfiltration { .. } => Reason::SecretExfiltration,
            ProxyError::Minting { .. } => Reason::CredentialMinting,
            ProxyError::UpstreamEncoding(_) => Reason::UpstreamEncoding,
            ProxyError::CredentialUnavailable { .. } => Reason::CredentialUnavailable,
            ProxyError::PayloadTooLarge { .. } => Reason::BodyTooLarge,
            ProxyError::UpstreamCertificate(_) => Reason::UpstreamCertUntrusted,
            ProxyError::Upstream(_) => Reason::UpstreamFailed,
            ProxyError::UpstreamTimeout => Reason::UpstreamTimeout,
            ProxyError::HandshakeTimeout => Reason::TlsHandshakeTimeout,
            ProxyError::Limited(r) => r.reason,
            ProxyError::ApprovalDenied { .. } => Reason::ApprovalDenied,
            ProxyError::ApprovalTimedOut(..) => Reason::ApprovalTimeout,
            ProxyError::ApprovalQueueFull => Reason::ApprovalQueueFull,
            ProxyError::Protocol(refused) => refused.reason,
            ProxyError::McpSessionForeign => Reason::McpSessionForeign,
            ProxyError::McpAnswer { code, .. } => *code,
            ProxyError::UnknownSource(_) => Reason::UnknownSource,
            ProxyError::AuditUnavailable => Reason::AuditUnavailable,
            ProxyError::Held => Reason::SandboxHeld,
            ProxyError::Preview { code, .. } | ProxyError::Access { code, .. } | ProxyError::Model { code, .. } => {
                *code
            }
            ProxyError::Internal => Reason::Internal,
        }
    }

    /// Whose failure this is (every variant named: a new one cannot compile without a side).
    pub(crate) fn side(&self) -> Side {
        match self {
            ProxyError::Auth(_)
            | ProxyError::Target(_)
            | ProxyError::NotProxyRequest
            | ProxyError::BadRequest { .. }
            | ProxyError::Denied { .. }
            | ProxyError::Misdirected(_)
            | ProxyError::Signature { .. }
            | ProxyError::Exfiltration { .. }
            | ProxyError::Minting { .. }
            | ProxyError::SecretExfiltration { .. }
            | ProxyError::PayloadTooLarge { .. }
            | ProxyError::Limited(_)
            | ProxyError::ApprovalDenied { .. }
            | ProxyError::ApprovalTimedOut(..)
            | ProxyError::ApprovalQueueFull
            | ProxyError::Protocol(_)
            | ProxyError::McpSessionForeign
            | ProxyError::UnknownSource(_)
            | ProxyError::Held
            | ProxyError::Dial(DialError::Refused(_)) => Side::Downstream,
            ProxyError::Dial(DialError::Resolve { .. } | DialError::NoAddress { .. })
            | ProxyError::Dial(DialError::Connect { .. } | DialError::Timeout(_))
            | ProxyError::McpAnswer { .. }
            | ProxyError::UpstreamEncoding(_)
            | ProxyError::UpstreamCertificate(_)
            | ProxyError::Upstream(_)
            | ProxyError::UpstreamTimeout
            | ProxyError::HandshakeTimeout => Side::Upstream,
            // A dev server that did not answer is the preview's upstream; the person's request otherwise, or
            // cordon's own trouble (a session it could not sign, a sandbox with no address of its own).
            ProxyError::Preview {
                code: Reason::PreviewUnreachable | Reason::PreviewTimeout,
                ..
            } => Side::Upstream,
            ProxyError::Preview { .. } | ProxyError::Access { .. } if self.is_refusal() => Side::Downstream,
            ProxyError::Access { .. } => Side::Internal,
            ProxyError::Preview { .. } => Side::Internal,
            ProxyError::Model { .. } if self.is_refusal() => Side::Downstream,
            ProxyError::Model { .. } => Side::Internal,
            ProxyError::CredentialUnavailable { .. } | ProxyError::AuditUnavailable | ProxyError::Internal => {
                Side::Internal
            }
        }
    }

    /// Whether the request was refused (as opposed to allowed and then failing): its reason is answered with a
    /// 4xx, in a protocol's own words or by the DNS responder, or cordon cannot record it.
    pub(crate) fn is_refusal(&self) -> bool {
        let refused = match self.reason().answer() {
            Answer::Status(s) => (400..500).contains(&s),
            Answer::InProtocol | Answer::Dns(_) => true,
            Answer::Close(_) | Answer::Closed | Answer::Record => false,
        };
        refused || matches!(self, ProxyError::AuditUnavailable)
    }

    /// The detail the audit record keeps for operators (never sent to the client): what exceeded a limit,
    /// which placeholder was out of place, or why something failed; nothing for a plain refusal, whose
    /// reason code says it all.
    pub(crate) fn audit_detail(&self) -> Option<String> {
        match self {
            ProxyError::Exfiltration { credential, why } => {
                Some(format!("placeholder of credential {credential}: {why}"))
            }
            ProxyError::SecretExfiltration { credential } => Some(format!("the secret of credential {credential}")),
            ProxyError::Minting { credential, call } => Some(format!("{call} through credential {credential}")),
            ProxyError::Limited(refusal) => Some(refusal.message.clone()),
            ProxyError::Protocol(refused) => Some(refused.message.clone()),
            ProxyError::McpAnswer { message, .. } | ProxyError::Preview { message, .. } => Some(message.clone()),
            ProxyError::Access { message, details, .. } if details.is_empty() => Some(message.clone()),
            ProxyError::Access { message, details, .. } => Some(format!("{message}: {}", details.join("; "))),
            ProxyError::Model { message, .. } => Some(message.clone()),
            // A plain refusal: its reason code says it all.
            ProxyError::Auth(_)
            | ProxyError::Target(_)
            | ProxyError::NotProxyRequest
            | ProxyError::BadRequest { .. }
            | ProxyError::Denied { .. }
            | ProxyError::Misdirected(_)
            | ProxyError::Signature { .. }
            | ProxyError::PayloadTooLarge { .. }
            | ProxyError::ApprovalDenied { .. }
            | ProxyError::ApprovalTimedOut(..)
            | ProxyError::UnknownSource(_)
            | ProxyError::Held
            | ProxyError::McpSessionForeign
            | ProxyError::Dial(DialError::Refused(_)) => None,
            ProxyError::Dial(DialError::Connect { addr, source, .. }) => Some(format!("{addr}: {source}")),
            ProxyError::Dial(DialError::Resolve { detail, .. }) => Some(detail.clone()),
            ProxyError::CredentialUnavailable { credential, detail } => {
                Some(format!("credential {credential}: {detail}"))
            }
            ProxyError::Dial(DialError::NoAddress { .. } | DialError::Timeout(_))
            | ProxyError::UpstreamEncoding(_)
            | ProxyError::UpstreamCertificate(_)
            | ProxyError::Upstream(_)
            | ProxyError::UpstreamTimeout
            | ProxyError::HandshakeTimeout
            | ProxyError::ApprovalQueueFull
            | ProxyError::Internal => Some(self.to_string()),
            // Refused for cordon's own reason; the reason code says which.
            ProxyError::AuditUnavailable => None,
        }
    }

    /// The text sent to the client: what was refused, never internal detail.
    pub(crate) fn public_message(&self) -> String {
        match self {
            // Which address a name resolved to is the operator's business, not the sandbox's.
            ProxyError::Dial(DialError::Connect { target, .. }) | ProxyError::Dial(DialError::Timeout(target)) => {
                format!("could not connect to {target}")
            }
            ProxyError::Upstream(_) => "the upstream connection failed".to_string(),
            // These messages name only what the sandbox sent or may know (no address it did not ask for, no
            // upstream's or vault's words): every variant is named here, so a new one is judged before it can
            // answer a sandbox.
            ProxyError::Auth(_)
            | ProxyError::Target(_)
            | ProxyError::NotProxyRequest
            | ProxyError::BadRequest { .. }
            | ProxyError::Denied { .. }
            | ProxyError::Dial(DialError::Refused(_) | DialError::Resolve { .. } | DialError::NoAddress { .. })
            | ProxyError::Misdirected(_)
            | ProxyError::Signature { .. }
            | ProxyError::Exfiltration { .. }
            | ProxyError::Minting { .. }
            | ProxyError::SecretExfiltration { .. }
            | ProxyError::UpstreamEncoding(_)
            | ProxyError::PayloadTooLarge { .. }
            | ProxyError::CredentialUnavailable { .. }
            | ProxyError::UpstreamCertificate(_)
            | ProxyError::Limited(_)
            | ProxyError::HandshakeTimeout
            | ProxyError::ApprovalDenied { .. }
            | ProxyError::ApprovalTimedOut(..)
            | ProxyError::ApprovalQueueFull
            | ProxyError::Protocol(_)
            | ProxyError::McpSessionForeign
            | ProxyError::McpAnswer { .. }
            | ProxyError::UpstreamTimeout
            | ProxyError::UnknownSource(_)
            | ProxyError::Held
            | ProxyError::AuditUnavailable
            | ProxyError::Preview { .. }
            | ProxyError::Access { .. }
            | ProxyError::Model { .. }
            | ProxyError::Internal => self.to_string(),
        }
    }
}

/// The HTTP status a refusal for `reason` is answered with, as the registry says (see [`ProxyError::status`]).
pub(crate) fn status_of(reason: Reason) -> StatusCode {
    reason
        .answer()
        .http_status()
        .and_then(|s| StatusCode::from_u16(s).ok())
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// Shown for an empty 200 to CONNECT.
pub(crate) fn connect_established() -> Response<ProxyBody> {
    Response::new(body::empty())
}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;
