//! Every way a request can fail, and the one mapping from failure to HTTP status, reason code and body.
//!
//! 407 asks "who are you?", 403 says "not allowed", 429 "too much", 502/504 "upstream trouble". Bodies are
//! short and name what was refused; they never carry internal detail, tokens or secrets (the audit record
//! carries the detail).

use http::{HeaderValue, Response, StatusCode, header};

use crate::body::{self, ProxyBody};
use crate::identity::AuthFailure;
use crate::net::DialError;
use crate::policy::DenyReason;
use crate::reason::Reason;
use crate::target::{Target, TargetError};

mod raw;
pub(crate) use raw::{
    framing_status, hyper_parse_status, render_framing, render_overloaded, render_unauthenticated_limit,
};

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
        credential: String,
        /// Why it is out of place.
        why: String,
    },
    /// A call that would mint a credential the sandbox keeps (new AWS keys, a GitHub token, an OAuth2 token),
    /// through a credential whose `allow_minting` does not name it.
    #[error(
        "refused: {call} makes a new credential the sandbox could keep; credential {credential:?} does not allow it (allow_minting)"
    )]
    Minting {
        /// The credential's name.
        credential: String,
        /// The call, as `allow_minting` names it.
        call: String,
    },
    /// A real secret was sent where its credential is not bound.
    #[error("refused: the request carries the secret of credential {credential:?}, which may not go here")]
    SecretExfiltration {
        /// The credential's name (never its value).
        credential: String,
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
        credential: String,
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
    /// cordon itself went wrong (an entry handed the pipeline something it does not handle).
    #[error("internal error")]
    Internal,
}

/// Whose the failure is, as pingora tells its errors apart: the sandbox's request (refused or malformed: the
/// sandbox has to change what it sends), the upstream's (it failed, timed out or was not trusted), or cordon's
/// own (a credential it could not have, audit it could not write, a fault of its own). The audit record carries
/// it as `side`, so `tls_handshake_timeout` or a 502 says on which side of cordon it happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// The sandbox's side: what it sent, or who it is.
    Downstream,
    /// The destination's side.
    Upstream,
    /// cordon itself.
    Internal,
}

impl Side {
    /// The name in the audit record.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Side::Downstream => "downstream",
            Side::Upstream => "upstream",
            Side::Internal => "internal",
        }
    }
}

impl ProxyError {
    /// The HTTP status this failure is answered with.
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            ProxyError::Auth(_) => StatusCode::PROXY_AUTHENTICATION_REQUIRED,
            ProxyError::Target(_) | ProxyError::NotProxyRequest | ProxyError::BadRequest { .. } => {
                StatusCode::BAD_REQUEST
            }
            ProxyError::Denied { .. }
            | ProxyError::Exfiltration { .. }
            | ProxyError::SecretExfiltration { .. }
            | ProxyError::Minting { .. }
            | ProxyError::Signature { .. } => StatusCode::FORBIDDEN,
            ProxyError::UpstreamEncoding(_) => StatusCode::BAD_GATEWAY,
            ProxyError::CredentialUnavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            ProxyError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ProxyError::Dial(d) => match d {
                DialError::Refused(_) => StatusCode::FORBIDDEN,
                DialError::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
                DialError::Resolve { .. } | DialError::NoAddress { .. } | DialError::Connect { .. } => {
                    StatusCode::BAD_GATEWAY
                }
            },
            ProxyError::Misdirected(_) => StatusCode::MISDIRECTED_REQUEST,
            ProxyError::Upstream(_) | ProxyError::UpstreamCertificate(_) => StatusCode::BAD_GATEWAY,
            ProxyError::UpstreamTimeout | ProxyError::HandshakeTimeout => StatusCode::GATEWAY_TIMEOUT,
            ProxyError::Limited(_) => StatusCode::TOO_MANY_REQUESTS,
            ProxyError::ApprovalDenied { .. } | ProxyError::ApprovalTimedOut(..) => StatusCode::FORBIDDEN,
            ProxyError::ApprovalQueueFull => StatusCode::SERVICE_UNAVAILABLE,
            ProxyError::UnknownSource(_) => StatusCode::FORBIDDEN,
            ProxyError::AuditUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            ProxyError::Held => StatusCode::FORBIDDEN,
            ProxyError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
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
            ProxyError::UnknownSource(_) => Reason::UnknownSource,
            ProxyError::AuditUnavailable => Reason::AuditUnavailable,
            ProxyError::Held => Reason::SandboxHeld,
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
            | ProxyError::UnknownSource(_)
            | ProxyError::Held
            | ProxyError::Dial(DialError::Refused(_)) => Side::Downstream,
            ProxyError::Dial(DialError::Resolve { .. } | DialError::NoAddress { .. })
            | ProxyError::Dial(DialError::Connect { .. } | DialError::Timeout(_))
            | ProxyError::UpstreamEncoding(_)
            | ProxyError::UpstreamCertificate(_)
            | ProxyError::Upstream(_)
            | ProxyError::UpstreamTimeout
            | ProxyError::HandshakeTimeout => Side::Upstream,
            ProxyError::CredentialUnavailable { .. } | ProxyError::AuditUnavailable | ProxyError::Internal => {
                Side::Internal
            }
        }
    }

    /// Whether the request was refused (as opposed to allowed and then failing).
    pub(crate) fn is_refusal(&self) -> bool {
        self.status().is_client_error() || matches!(self, ProxyError::AuditUnavailable)
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
            | ProxyError::UpstreamTimeout
            | ProxyError::UnknownSource(_)
            | ProxyError::Held
            | ProxyError::AuditUnavailable
            | ProxyError::Internal => self.to_string(),
        }
    }

    /// The response the client gets.
    pub(crate) fn response(&self) -> Response<ProxyBody> {
        let status = self.status();
        let mut resp = Response::new(body::full(format!("cordon: {}\n", self.public_message())));
        *resp.status_mut() = status;
        let h = resp.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        h.insert(REASON_HEADER, HeaderValue::from_static(self.reason().code()));
        if let ProxyError::Limited(r) = self {
            // At least one second: a Retry-After of 0 invites a busy loop.
            let secs = r.retry_after.as_secs().max(1);
            if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
                h.insert(header::RETRY_AFTER, v);
            }
        }
        if status == StatusCode::PROXY_AUTHENTICATION_REQUIRED {
            h.insert(
                header::PROXY_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"cordon\""),
            );
        }
        resp
    }
}

/// How a tunnel ended, or a connection that never became one, other than by its two ends closing cleanly:
/// the one list of these reasons, with their codes and details for the audit record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TunnelEnd {
    /// The sandbox lost access (revoked, expired or removed), spent its byte budget, or the policy no longer
    /// allows the destination.
    Closed,
    /// Cut at shutdown after the drain deadline.
    Shutdown,
    /// Nothing moved for `timeouts.idle`.
    Idle(std::time::Duration),
    /// Open for `timeouts.tunnel_max`.
    MaxLifetime(std::time::Duration),
    /// The sandbox's byte budget is spent.
    ByteBudget,
    /// The TLS server name is not the tunnel's host (domain fronting).
    SniMismatch(String),
    /// The client did not start TLS where it had to.
    NotTls(String),
    /// The client's TLS handshake (or ClientHello) did not complete within `timeouts.tls_handshake`.
    HandshakeTimeout(String),
    /// The TLS handshake with the client failed.
    HandshakeFailed(String),
    /// No leaf certificate could be had from the sandbox's CA.
    LeafUnavailable(String),
    /// A transparent connection from an address no sandbox claims.
    UnknownSource(std::net::IpAddr),
    /// A transparent connection that is neither TLS nor HTTP.
    NotTlsOrHttp(String),
    /// A transparent TLS connection whose ClientHello names no server.
    NoSni,
    /// A transparent TLS connection whose server name is not a host name.
    BadSni(String),
    /// The client connection was not handed over after the 200 to CONNECT.
    Handover(String),
    /// The upstream closed before the first bytes reached it.
    UpstreamClosed(String),
    /// Either side failed while bytes were moving.
    Failed(String),
    /// What the sandbox sent on it was refused (a placeholder or a secret in a WebSocket frame).
    Refused {
        /// The refusal's reason code.
        code: Reason,
        /// What was refused.
        detail: String,
    },
}

impl TunnelEnd {
    /// Stable reason code, as in the audit record (`None` for failures that carry only a detail).
    pub(crate) fn reason(&self) -> Option<Reason> {
        Some(match self {
            TunnelEnd::Closed => Reason::Closed,
            TunnelEnd::Shutdown => Reason::Shutdown,
            TunnelEnd::Idle(_) => Reason::IdleTimeout,
            TunnelEnd::MaxLifetime(_) => Reason::TunnelMaxLifetime,
            TunnelEnd::ByteBudget => Reason::ByteBudget,
            TunnelEnd::SniMismatch(_) => Reason::SniMismatch,
            TunnelEnd::NotTls(_) => Reason::NotTls,
            TunnelEnd::HandshakeTimeout(_) => Reason::TlsHandshakeTimeout,
            TunnelEnd::HandshakeFailed(_) => Reason::TlsHandshakeFailed,
            TunnelEnd::LeafUnavailable(_) => Reason::LeafUnavailable,
            TunnelEnd::UnknownSource(_) => Reason::UnknownSource,
            TunnelEnd::NotTlsOrHttp(_) => Reason::NotTlsOrHttp,
            TunnelEnd::NoSni => Reason::NoSni,
            TunnelEnd::BadSni(_) => Reason::BadSni,
            TunnelEnd::Refused { code, .. } => *code,
            TunnelEnd::Handover(_) | TunnelEnd::UpstreamClosed(_) | TunnelEnd::Failed(_) => return None,
        })
    }

    /// Whether cordon refused what the sandbox did (a `deny` in the audit record, whatever status it had been
    /// given before): a TLS or transparent connection it would not serve, bytes it would not pass, or a tunnel it
    /// closed because the sandbox lost access or spent its budget. Timeouts, shutdown and failures are not.
    pub(crate) fn is_refusal(&self) -> bool {
        match self {
            TunnelEnd::Closed
            | TunnelEnd::ByteBudget
            | TunnelEnd::SniMismatch(_)
            | TunnelEnd::NotTls(_)
            | TunnelEnd::UnknownSource(_)
            | TunnelEnd::NotTlsOrHttp(_)
            | TunnelEnd::NoSni
            | TunnelEnd::BadSni(_)
            | TunnelEnd::Refused { .. } => true,
            TunnelEnd::Shutdown
            | TunnelEnd::Idle(_)
            | TunnelEnd::MaxLifetime(_)
            | TunnelEnd::HandshakeTimeout(_)
            | TunnelEnd::HandshakeFailed(_)
            | TunnelEnd::LeafUnavailable(_)
            | TunnelEnd::Handover(_)
            | TunnelEnd::UpstreamClosed(_)
            | TunnelEnd::Failed(_) => false,
        }
    }

    /// Whose end this is: the sandbox's (it lost access, sent what cordon refuses, failed its handshake), the
    /// upstream's, or cordon's own; none for a tunnel that ran out its time or failed on either side.
    pub(crate) fn side(&self) -> Option<Side> {
        match self {
            TunnelEnd::Closed
            | TunnelEnd::ByteBudget
            | TunnelEnd::SniMismatch(_)
            | TunnelEnd::NotTls(_)
            | TunnelEnd::HandshakeTimeout(_)
            | TunnelEnd::HandshakeFailed(_)
            | TunnelEnd::UnknownSource(_)
            | TunnelEnd::NotTlsOrHttp(_)
            | TunnelEnd::NoSni
            | TunnelEnd::BadSni(_)
            | TunnelEnd::Refused { .. } => Some(Side::Downstream),
            TunnelEnd::UpstreamClosed(_) => Some(Side::Upstream),
            TunnelEnd::Shutdown | TunnelEnd::LeafUnavailable(_) | TunnelEnd::Handover(_) => Some(Side::Internal),
            TunnelEnd::Idle(_) | TunnelEnd::MaxLifetime(_) | TunnelEnd::Failed(_) => None,
        }
    }

    /// What happened, for operators.
    pub(crate) fn detail(&self) -> String {
        match self {
            TunnelEnd::Closed => {
                "closed: the sandbox lost access (revoked, expired or removed), spent its byte budget, \
                or the policy no longer allows this destination"
                    .into()
            }
            TunnelEnd::Shutdown => "cut at shutdown after the drain deadline".into(),
            TunnelEnd::Idle(d) => format!("nothing moved for {d:?} (timeouts.idle)"),
            TunnelEnd::MaxLifetime(d) => format!("open for {d:?} (timeouts.tunnel_max)"),
            TunnelEnd::ByteBudget => "the sandbox's byte budget is spent (limits.per_sandbox)".into(),
            TunnelEnd::SniMismatch(sni) => format!("the TLS server name {sni:?} is not the CONNECT host"),
            TunnelEnd::UnknownSource(ip) => format!("no sandbox's source_cidrs hold {ip}"),
            TunnelEnd::NoSni => {
                "the TLS ClientHello names no server (SNI); transparent mode needs it to know the host".into()
            }
            TunnelEnd::BadSni(name) => format!("the TLS server name {name:?} is not a host name"),
            TunnelEnd::Handover(e) => format!("the client connection was not handed over: {e}"),
            TunnelEnd::UpstreamClosed(e) => format!("the upstream closed: {e}"),
            TunnelEnd::Failed(e) => format!("tunnel ended with an error: {e}"),
            TunnelEnd::Refused { detail, .. } => detail.clone(),
            TunnelEnd::NotTls(why)
            | TunnelEnd::HandshakeTimeout(why)
            | TunnelEnd::HandshakeFailed(why)
            | TunnelEnd::LeafUnavailable(why)
            | TunnelEnd::NotTlsOrHttp(why) => why.clone(),
        }
    }
}

/// Shown for an empty 200 to CONNECT.
pub(crate) fn connect_established() -> Response<ProxyBody> {
    Response::new(body::empty())
}
