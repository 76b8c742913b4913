//! Whose a failure is: the sandbox's, the upstream's or cordon's own.

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
