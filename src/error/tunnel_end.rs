//! How a tunnel ended: the one list of the ways, with the code, the detail and the side of each.

use super::side::Side;
use crate::reason::Reason;

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
