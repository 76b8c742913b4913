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
    /// A program a jailed command started (not a request's record).
    Exec,
    /// A file a jailed command wrote, created, renamed or removed (not a request's record).
    File,
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
            Kind::Exec => "exec",
            Kind::File => "file",
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

/// An access request the sandbox filed or read (at `access.cordon.internal`): the access part of a record.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct AccessRecord {
    /// The request's id (`ar-...`); `None` for a list of the sandbox's own.
    pub(crate) id: Option<String>,
    /// `filed`, `granted` (at once, inside the boundary), `listed`, `read` or `not_needed`.
    pub(crate) outcome: &'static str,
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

/// The `exec` part of a record: a program a jailed command started, or how many times one was started past the
/// rate the log keeps one by one.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct ExecRecord {
    /// The program, as the command named it (resolved against its folder).
    pub(crate) path: String,
    /// Its arguments (at most 256, 16 KiB in all).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) argv: Option<Vec<String>>,
    /// Whether `argv` was cut short.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) truncated: bool,
    /// The folder it started in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cwd: Option<String>,
    /// Its process id (in cordon's PID namespace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) pid: Option<u32>,
    /// Its parent's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ppid: Option<u32>,
    /// Its real uid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) uid: Option<u32>,
    /// A program with no path (`path` is the kernel's name of it): a `memfd`, a deleted file.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) anonymous: bool,
    /// An attempt the kernel refuses: the error it answers (`ENOENT`, `EACCES`, ...), as cordon saw while the
    /// call waited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<&'static str>,
    /// Why what the call names could not be read (its memory, folder or descriptor out of cordon's reach).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) unreadable: Option<String>,
    /// For a summary: the starts counted and not recorded one by one, by folder, within `window_ms`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) aggregated: Option<Aggregated>,
}

/// The `file` part of a record: a file a jailed command wrote, created, renamed or removed, or how many it did in
/// one folder past the rate the log keeps one by one.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct FileRecord {
    /// `write`, `create`, `rename`, `remove`, `mkdir`, `link`; `many` for a summary.
    pub(crate) op: &'static str,
    /// The file (for a summary: the folder; `*` for the events past the log's bounds on folders).
    pub(crate) path: String,
    /// For a rename or a link: the new name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) to: Option<String>,
    /// The process (none for a summary).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) pid: Option<u32>,
    /// The system call (none for a summary).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) syscall: Option<&'static str>,
    /// An attempt the kernel refuses: the error it answers (`ENOENT`, `EROFS`, `EACCES`, `EEXIST`, ...), as
    /// cordon saw while the call waited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<&'static str>,
    /// Why what the call names could not be read (`path` is then what could, or `?`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) unreadable: Option<String>,
    /// For a summary: the operations counted and not recorded one by one, by kind, within `window_ms`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) aggregated: Option<Aggregated>,
}

/// How many events a summary stands for.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct Aggregated {
    /// In all.
    pub(crate) count: u64,
    /// By operation (or by program, for executions).
    pub(crate) by: std::collections::BTreeMap<String, u64>,
    /// The window they were counted in, in milliseconds.
    pub(crate) window_ms: u64,
}
