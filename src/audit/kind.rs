//! What a record describes and what was decided: the closed vocabularies of `kind` and `decision`, and the
//! approval part of a record (who decided a held request, how far, after how long), the hashes of a file a
//! jailed command changed, and the admin part (who did what through the admin API or the console).

use serde::{Deserialize, Serialize};

/// What kind of traffic a record describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A plain HTTP request forwarded in absolute form.
    Http,
    /// A CONNECT tunnel (intercepted or not).
    Connect,
    /// A request inside an intercepted CONNECT.
    Https,
    /// Bytes that never became a request (refused framing, oversized head).
    Malformed,
    /// Failed proxy authentications from one address that were throttled, counted in one record.
    AuthFailures,
    /// A connection that reached the transparent listener (TLS, or refused before it was HTTP).
    Transparent,
    /// A DNS query to the responder.
    Dns,
    /// An `on_violation` action taken on a sandbox (not a request's record).
    Violation,
    /// A request to a preview URL: a person reaching a port of a sandbox.
    Preview,
    /// A file developer tools run that a jailed command changed (not a request's record).
    JailFile,
    /// An admin API action: who did what to which sandbox or held request (not a request's record).
    Admin,
    /// A jail started, reached one of its limits, or ended (not a request's record).
    Jail,
}

impl Kind {
    /// The name used in the record and the metrics.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Http => "http",
            Kind::Connect => "connect",
            Kind::Https => "https",
            Kind::Malformed => "malformed",
            Kind::AuthFailures => "auth_failures",
            Kind::Transparent => "transparent",
            Kind::Dns => "dns",
            Kind::Violation => "violation",
            Kind::Preview => "preview",
            Kind::JailFile => "jail_file",
            Kind::Admin => "admin",
            Kind::Jail => "jail",
        }
    }
}

/// The outcome of the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Allowed by a rule.
    Allow,
    /// Refused.
    Deny,
    /// Allowed only because the policy is in report mode.
    WouldDeny,
}

/// Who asked, who decided, when: the approval part of a record.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ApprovalRecord {
    /// The approval's id (or the grant's, for a request a standing grant let through).
    pub(crate) id: String,
    /// `allow`, `deny`, `timeout`, `granted`, `queue_full`, `approval_sandbox_limit` or `approval_user_limit`.
    pub(crate) outcome: String,
    /// Who decided.
    pub(crate) by: Option<String>,
    /// `once`, `always` or `exact`.
    pub(crate) scope: Option<String>,
    /// Milliseconds the request waited.
    pub(crate) waited_ms: u64,
}

/// A file's hashes before and after (a `jail_file` record's `sha256`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct Hashes {
    /// Before the command ran (`None`: the file did not exist).
    pub(crate) before: Option<String>,
    /// After it ended (`None`: it no longer exists).
    pub(crate) after: Option<String>,
}

/// The `admin` part of a record.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct AdminRecord {
    /// What was done: `sandbox_created`, `approval_decided`, `reload`, …
    pub(crate) action: String,
    /// Who: the token's name or the signed-in person (`null`: no valid credential was presented).
    pub(crate) principal: Option<String>,
    /// How the principal proved itself: `token` or `oidc`.
    pub(crate) via: Option<crate::principal::Via>,
    /// The roles it held.
    pub(crate) roles: crate::principal::Roles,
    /// A sentence for operators: the generation a reload made, the preview's port, why it was refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) detail: Option<String>,
}

/// The `jail` part of a record: what happened to a jail and, for a limit, which and how it is held.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct JailRecord {
    /// `start`, `limit` or `end`.
    pub(crate) event: &'static str,
    /// For `limit`: `cpu`, `memory`, `pids`, `disk`, `wall` or `idle`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) limit: Option<&'static str>,
    /// For `limit`: the limit's value (`2GiB`, `512`, `2h`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) value: Option<String>,
    /// What holds it (`cgroup v1 memory, no swap`, `RLIMIT_AS per process`, `cordon`), or at `start` every
    /// limit with its mechanism.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) mechanism: Option<String>,
    /// How many times it was hit since the last record (processes OOM-killed, forks refused).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) count: Option<u64>,
    /// A sentence for operators.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) detail: Option<String>,
    /// At `end`: the jail's exit status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) status: Option<i32>,
}
