//! What a refusal tells the agent that meets it, per reason: whose side it is on and whether asking a person
//! can help (the registry's agent-facing facts; the refusal's body and headers carry them, `src/error/refusal.rs`
//! renders them, and the book's Troubleshooting page shows them per code).
//!
//! Every reason is named in [`Reason::agent`]: a reason added to the registry cannot compile before someone has
//! said whose it is and whether a person can help with it.

use super::Reason;

/// Whose side a refusal is on, as the agent reads it in `whose`: what it has to change, if anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Whose {
    /// The policy (a rule, the address guard, a credential's binding, an MCP or GraphQL rule, a person's decision)
    /// does not allow it: sending it again will not help; only a change of access could.
    Policy,
    /// The request, or the client's proxy settings, are malformed or incomplete: the client must send it
    /// differently.
    Request,
    /// A rate, cap or budget is spent: wait (`Retry-After`) and send it again.
    Limit,
    /// The destination failed (it did not resolve, answer or verify): nothing about the sandbox's access.
    Upstream,
    /// cordon itself is in trouble (a credential source it could not reach, its audit, a fault of its own): not
    /// the sandbox's request and not its credentials.
    Cordon,
    /// Not a refusal a sandbox reads: a record, or an answer for people (previews, the admin API).
    Record,
}

impl Whose {
    /// The name in the refusal's `whose` field and the `x-cordon-whose` header.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Whose::Policy => "policy",
            Whose::Request => "request",
            Whose::Limit => "limit",
            Whose::Upstream => "upstream",
            Whose::Cordon => "cordon",
            Whose::Record => "record",
        }
    }

    /// Every value, for the documentation and its test.
    #[cfg(test)]
    pub(crate) const ALL: &'static [Whose] = &[
        Whose::Policy,
        Whose::Request,
        Whose::Limit,
        Whose::Upstream,
        Whose::Cordon,
        Whose::Record,
    ];
}

/// Said in every refusal a sandbox reads: cordon is the only way out, and trying another will not work. It names
/// no other way (a test holds every rendered refusal to that).
pub(crate) const NO_WAY_AROUND: &str =
    "cordon is this sandbox's only way out: another route to the same place will not work, and trying one is recorded.";

impl Reason {
    /// Whose side the refusal is on, and whether asking a person for access can help (a person who may change
    /// the sandbox's policy or approve the request: a rule that does not name the host, port, method, path, tool
    /// or operation; never a metadata address, a private network, a malformed request or a limit).
    pub(crate) const fn agent(self) -> (Whose, bool) {
        use Whose::*;
        match self {
            // A person can widen the sandbox's access, or decide a request nobody decided.
            Reason::NoRule
            | Reason::PortNotAllowed
            | Reason::MethodNotAllowed
            | Reason::PathNotAllowed
            | Reason::CredentialMinting
            | Reason::McpToolDenied
            | Reason::McpMethodDenied
            | Reason::GraphqlOperationDenied
            | Reason::ModelNotAllowed
            | Reason::ApprovalTimeout
            | Reason::ProtocolApprovalTimeout => (Policy, true),
            // Refused whatever a rule says, or a person already said no.
            Reason::MetadataName
            | Reason::MetadataAddress
            | Reason::SpecialRange
            | Reason::SelfAddress
            | Reason::CredentialExfiltration
            | Reason::SecretExfiltration
            | Reason::McpToolChanged
            | Reason::ApprovalDenied
            | Reason::ProtocolApprovalDenied
            | Reason::SandboxHeld
            | Reason::AccessNotOffered
            | Reason::ModelUnpriced
            | Reason::AccessPastBoundary => (Policy, false),
            // A sandbox whose time ran out: a person can start a new one.
            Reason::AuthExpired => (Request, true),
            Reason::AuthMissing
            | Reason::AuthMalformed
            | Reason::AuthInvalid
            | Reason::AuthRevoked
            | Reason::UnknownSource
            | Reason::NotProxyRequest
            | Reason::EmptyHost
            | Reason::NonAsciiHost
            | Reason::BadHost
            | Reason::EmptyLabel
            | Reason::LabelTooLong
            | Reason::HostTooLong
            | Reason::BadIpv6
            | Reason::ZoneId
            | Reason::UnbracketedIpv6
            | Reason::Userinfo
            | Reason::BadPort
            | Reason::MissingPort
            | Reason::NotAuthorityForm
            | Reason::NotAbsolute
            | Reason::BadScheme
            | Reason::MissingAuthority
            | Reason::RelativePath
            | Reason::DotSegment
            | Reason::BadPath
            | Reason::BadEscape
            | Reason::DuplicateHost
            | Reason::MissingHost
            | Reason::ConnectInTunnel
            | Reason::ConnectTransparent
            | Reason::BadTarget
            | Reason::HostPortMismatch
            | Reason::Misdirected
            | Reason::ClAndTe
            | Reason::DuplicateContentLength
            | Reason::InvalidContentLength
            | Reason::TeNotChunked
            | Reason::TeInHttp10
            | Reason::MalformedHead
            | Reason::MalformedChunk
            | Reason::BodyIncomplete
            | Reason::UnparseableRequest
            | Reason::HeadTooLarge
            | Reason::UriTooLong
            | Reason::AwsUnsigned
            | Reason::AwsSignatureMalformed
            | Reason::AwsSignatureUnsupported
            | Reason::AwsSignatureKey
            | Reason::AwsSignatureScope
            | Reason::AwsSignatureExpired
            | Reason::AwsSignatureMismatch
            | Reason::AwsSessionToken
            | Reason::AwsBodyUnreadable
            | Reason::MintingBodyUnreadable
            | Reason::TokenRequestAmbiguous
            | Reason::UnreadableBody
            | Reason::BodyUnreadable
            | Reason::BodyTooLarge
            | Reason::McpInvalid
            | Reason::McpSessionForeign
            | Reason::GraphqlInvalid
            | Reason::GraphqlPersistedUnknown
            | Reason::ModelApiInvalid
            | Reason::SniMismatch
            | Reason::NotTls
            | Reason::NotTlsOrHttp
            | Reason::NoSni
            | Reason::BadSni
            | Reason::TlsHandshakeFailed
            | Reason::DnsOpcodeUnsupported
            | Reason::DnsMalformed
            | Reason::DnsClassRefused
            | Reason::DnsAnyRefused
            | Reason::WebsocketMessageTooBig
            | Reason::AccessInvalid
            | Reason::AccessUnknown
            | Reason::AccessNeedsHttp => (Request, false),
            Reason::TooManyConnections
            | Reason::CredentialBudget
            | Reason::ModelBudgetSpent
            | Reason::SandboxRate
            | Reason::UserRate
            | Reason::HostRate
            | Reason::ConnectionRate
            | Reason::SandboxOpenLimit
            | Reason::UserOpenLimit
            | Reason::UploadBudget
            | Reason::DownloadBudget
            | Reason::ByteBudget
            | Reason::AuthThrottled
            | Reason::UnauthenticatedLimit
            | Reason::ApprovalSandboxLimit
            | Reason::ApprovalUserLimit
            | Reason::ApprovalQueueFull
            | Reason::AccessTooOften
            | Reason::TunnelMaxLifetime
            | Reason::IdleTimeout => (Limit, false),
            Reason::ResolveFailed
            | Reason::NoAddress
            | Reason::ConnectFailed
            | Reason::UpstreamFailed
            | Reason::UpstreamCertUntrusted
            | Reason::ConnectTimeout
            | Reason::UpstreamTimeout
            | Reason::TlsHandshakeTimeout
            | Reason::UpstreamEncoding
            | Reason::McpRedirect
            | Reason::McpAnswerUnreadable => (Upstream, false),
            Reason::CredentialUnavailable
            | Reason::AuditUnavailable
            | Reason::Internal
            | Reason::LeafUnavailable
            | Reason::ModelBudgetUnavailable => (Cordon, false),
            Reason::OnViolationRevoke
            | Reason::OnViolationHold
            | Reason::Closed
            | Reason::Shutdown
            | Reason::JailStarted
            | Reason::JailLimit
            | Reason::JailEnded
            | Reason::JailExec
            | Reason::JailFileWritten
            | Reason::JailAttempted
            | Reason::JailUnreadable
            | Reason::JailFileChanged
            | Reason::AdminAction
            | Reason::AdminUnauthorized
            | Reason::AdminForbidden
            | Reason::AdminNeedsTls
            | Reason::AdminCsrf
            | Reason::PreviewLogin
            | Reason::PreviewUnknown
            | Reason::PreviewOtherIncarnation
            | Reason::PreviewRevoked
            | Reason::PortNotExposed
            | Reason::PreviewOther
            | Reason::PreviewCrossOrigin
            | Reason::PreviewNoAddress
            | Reason::PreviewUnreachable
            | Reason::PreviewTimeout
            | Reason::PreviewFailed => (Record, false),
        }
    }

    /// Whose side the refusal is on.
    pub(crate) const fn whose(self) -> Whose {
        self.agent().0
    }

    /// Whether asking a person for access can help.
    pub(crate) const fn ask(self) -> bool {
        self.agent().1
    }

    /// What to do, in the agent's words: a sentence or two, ASCII, short enough for the `x-cordon-hint` header
    /// (at most [`HINT_MAX`] bytes; a test holds every reason to it). It never names a way around cordon.
    pub(crate) const fn hint(self) -> &'static str {
        match (self, self.agent()) {
            (Reason::CredentialUnavailable, _) => {
                "cordon could not get the credential it adds for this destination; your own keys and tokens are not the problem and need no change. Retry in a minute."
            }
            (Reason::AuditUnavailable | Reason::Internal, _) => {
                "cordon itself is in trouble, not your request: retry in a minute; if it goes on, tell the person who runs cordon."
            }
            (Reason::AuthMissing | Reason::AuthMalformed | Reason::AuthInvalid, _) => {
                "Send the request through the proxy set in HTTP_PROXY and HTTPS_PROXY, with the credential they carry; do not change or remove them."
            }
            (Reason::AuthExpired | Reason::AuthRevoked, _) => {
                "This sandbox's access to the network has ended; only a person can start a new sandbox."
            }
            (Reason::MetadataName | Reason::MetadataAddress, _) => {
                "Cloud metadata is never reachable from a sandbox, whatever the policy; do without it."
            }
            (Reason::SpecialRange | Reason::SelfAddress, _) => {
                "This address is on a private network the sandbox may not reach; do without it."
            }
            (Reason::CredentialExfiltration | Reason::SecretExfiltration, _) => {
                "The request carries a credential where it may not go; send it without."
            }
            (Reason::ApprovalDenied | Reason::ProtocolApprovalDenied, _) => {
                "A person denied this request; do not send it again."
            }
            (Reason::ModelUnpriced, _) => {
                "cordon cannot count the cost of this model, which a budget limits; use a model it prices (ask a person to price this one)."
            }
            (Reason::ModelBudgetSpent, _) => {
                "The model budget of this window is spent: wait until it renews (Retry-After), or ask a person to raise it."
            }
            (Reason::AccessPastBoundary, _) => {
                "This is more than a sandbox of this policy may ever be granted; narrow the request to what the answer does not name, or do without it."
            }
            (_, (Whose::Policy, true)) => {
                "The sandbox's policy does not allow this. If the task needs it, ask for access (ask_at, when given) or ask a person; otherwise do without it."
            }
            (_, (Whose::Policy, false)) => "This is refused whatever the policy says; asking for access will not help.",
            (_, (Whose::Request, _)) => {
                "The request is malformed or incomplete (see meaning): fix it and send it again through the proxy."
            }
            (_, (Whose::Limit, _)) => "Too much, too fast: wait (Retry-After, if given) and send it again.",
            (_, (Whose::Upstream, _)) => {
                "The destination failed, not the policy and not your credentials: retry later, or use another destination."
            }
            (_, (Whose::Cordon, _)) => "cordon itself is in trouble, not your request: retry in a minute.",
            (_, (Whose::Record, _)) => "Nothing: this is not a refusal of a sandbox's request.",
        }
    }
}

/// The name cordon answers itself, for a sandbox asking for access from inside: never resolved, never dialled.
pub(crate) const ACCESS_HOST: &str = "access.cordon.internal";

/// Where a sandbox files an access request (plain HTTP through its proxy; cordon answers it itself).
pub(crate) const ASK_AT: &str = "http://access.cordon.internal/v1/requests";

/// The schema's name and version, a refusal's `schema` field: a field is only ever added under it; a change of
/// meaning is a new version.
pub(crate) const SCHEMA: &str = "cordon.refusal/1";

impl Reason {
    /// The refusal's facts for a protocol's own error (MCP's `error.data`, GraphQL's `extensions`): the schema,
    /// the reason, whose side it is on, whether asking can help, the hint and that a way around will not work.
    pub(crate) fn in_protocol_facts(self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        m.insert("schema".into(), SCHEMA.into());
        m.insert("reason".into(), self.code().into());
        m.insert("whose".into(), self.whose().as_str().into());
        m.insert("ask".into(), self.ask().into());
        m.insert("hint".into(), self.hint().into());
        m.insert("no_way_around".into(), NO_WAY_AROUND.into());
        m
    }
}

/// The most bytes a hint may have (it travels in the `x-cordon-hint` header).
#[cfg(test)]
pub(crate) const HINT_MAX: usize = 200;
