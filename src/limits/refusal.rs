//! The answer of a limit that says no.

use std::time::Duration;

use crate::reason::Reason;

/// Why something was refused: a stable reason code and when to try again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct LimitRefusal {
    /// Stable reason code (one of the associated constants), for audit records, metrics and clients.
    pub(crate) reason: Reason,
    /// When to try again, in whole seconds (at least one): what the `Retry-After` header says.
    pub(crate) retry_after: Duration,
    /// A short sentence a person can act on.
    pub(crate) message: String,
}

impl LimitRefusal {
    /// The sandbox has as many requests waiting for approval as `approval.max_pending_per_sandbox` allows.
    pub(crate) const APPROVAL_SANDBOX_LIMIT: Reason = Reason::ApprovalSandboxLimit;
    /// The user's sandboxes have as many requests waiting for approval as `approval.max_pending_per_user` allows.
    pub(crate) const APPROVAL_USER_LIMIT: Reason = Reason::ApprovalUserLimit;
    /// A credential's usage budget for the sandbox (or its user) is spent in this window.
    pub(crate) const CREDENTIAL_BUDGET: Reason = Reason::CredentialBudget;
    /// The sandbox is over its request rate.
    pub(crate) const SANDBOX_RATE: Reason = Reason::SandboxRate;
    /// The user is over its request rate, over all of its sandboxes.
    pub(crate) const USER_RATE: Reason = Reason::UserRate;
    /// The sandbox is over its request rate to one host.
    pub(crate) const HOST_RATE: Reason = Reason::HostRate;
    /// The sandbox is opening connections or tunnels too fast.
    pub(crate) const CONNECTION_RATE: Reason = Reason::ConnectionRate;
    /// The sandbox has as many connections and tunnels open as allowed.
    pub(crate) const SANDBOX_OPEN_LIMIT: Reason = Reason::SandboxOpenLimit;
    /// The user has as many connections and tunnels open as allowed.
    pub(crate) const USER_OPEN_LIMIT: Reason = Reason::UserOpenLimit;
    /// The sandbox has used its upload budget of the current window.
    pub(crate) const UPLOAD_BUDGET: Reason = Reason::UploadBudget;
    /// The sandbox has used its download budget of the current window.
    pub(crate) const DOWNLOAD_BUDGET: Reason = Reason::DownloadBudget;
    /// The source address failed proxy authentication too often.
    pub(crate) const AUTH_THROTTLED: Reason = Reason::AuthThrottled;
}
