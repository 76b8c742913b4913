//! The answer of a limit that says no.

use std::time::Duration;

/// Why something was refused: a stable reason code and when to try again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Refusal {
    /// Stable reason code (one of the associated constants), for audit records, metrics and clients.
    pub(crate) reason: &'static str,
    /// When to try again, in whole seconds (at least one): what the `Retry-After` header says.
    pub(crate) retry_after: Duration,
    /// A short sentence a person can act on.
    pub(crate) message: String,
}

impl Refusal {
    /// The sandbox has as many requests waiting for approval as `approval.max_pending_per_sandbox` allows.
    pub(crate) const APPROVAL_SANDBOX_LIMIT: &'static str = "approval_sandbox_limit";
    /// The user's sandboxes have as many requests waiting for approval as `approval.max_pending_per_user` allows.
    pub(crate) const APPROVAL_USER_LIMIT: &'static str = "approval_user_limit";
    /// A credential's usage budget for the sandbox (or its user) is spent in this window.
    pub(crate) const CREDENTIAL_BUDGET: &'static str = "credential_budget";
    /// The sandbox is over its request rate.
    pub(crate) const SANDBOX_RATE: &'static str = "sandbox_rate";
    /// The user is over its request rate, over all of its sandboxes.
    pub(crate) const USER_RATE: &'static str = "user_rate";
    /// The sandbox is over its request rate to one host.
    pub(crate) const HOST_RATE: &'static str = "host_rate";
    /// The sandbox is opening connections or tunnels too fast.
    pub(crate) const CONNECTION_RATE: &'static str = "connection_rate";
    /// The sandbox has as many connections and tunnels open as allowed.
    pub(crate) const SANDBOX_OPEN_LIMIT: &'static str = "sandbox_open_limit";
    /// The user has as many connections and tunnels open as allowed.
    pub(crate) const USER_OPEN_LIMIT: &'static str = "user_open_limit";
    /// The sandbox has used its upload budget of the current window.
    pub(crate) const UPLOAD_BUDGET: &'static str = "upload_budget";
    /// The sandbox has used its download budget of the current window.
    pub(crate) const DOWNLOAD_BUDGET: &'static str = "download_budget";
    /// The source address failed proxy authentication too often.
    pub(crate) const AUTH_THROTTLED: &'static str = "auth_throttled";
}
