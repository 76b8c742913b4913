//! The approval types: what is asked, what was decided, how an ask ended, and the standing grants.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::shown::{shown, shown_lines, shown_query};
use crate::identity::Sandbox;
use crate::names::SandboxId;

/// What is being asked about: the request as the sandbox sent it, with what the approver must not see
/// (credentials, placeholders) redacted by the one who asks. Nothing secret: cordon's own credentials are attached only after
/// approval. Every text a sandbox chose is escaped visibly when shown ([`visible`]), never here: grants match
/// on what was sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct HeldRequest {
    /// The sandbox incarnation that sent the request (not shown: `sandbox`, `user` and `policy` say it).
    #[serde(skip)]
    pub(crate) who: Arc<Sandbox>,
    /// The sandbox's id (written as it is: an id holds only characters [`shown`] leaves alone).
    pub(crate) sandbox: SandboxId,
    /// The user the sandbox belongs to.
    #[serde(serialize_with = "shown")]
    pub(crate) user: String,
    /// The policy that asked.
    #[serde(serialize_with = "shown")]
    pub(crate) policy: String,
    /// The request method.
    #[serde(serialize_with = "shown")]
    pub(crate) method: String,
    /// The destination host.
    #[serde(serialize_with = "shown")]
    pub(crate) host: String,
    /// The destination port.
    pub(crate) port: u16,
    /// The request path.
    #[serde(serialize_with = "shown")]
    pub(crate) path: String,
    /// The query, without its `?`, as sent (not shown: `shown_query` is).
    #[serde(skip)]
    pub(crate) query: Option<String>,
    /// The query with placeholders redacted.
    #[serde(rename = "query", serialize_with = "shown_query")]
    pub(crate) shown_query: Option<String>,
    /// The whole URL (scheme, authority, path and query), placeholders redacted.
    #[serde(serialize_with = "shown")]
    pub(crate) url: String,
    /// The request headers in order, credentials and placeholders already redacted.
    pub(crate) headers: Vec<Header>,
    /// The body's length and digest.
    pub(crate) body: BodySeen,
    /// The body's first [`MAX_EXCERPT`](super::shown::MAX_EXCERPT) characters (invalid UTF-8 replaced), placeholders redacted.
    #[serde(serialize_with = "shown")]
    pub(crate) excerpt: String,
    /// The index of the policy rule that asked.
    pub(crate) rule: usize,
    /// What that rule said, digested: a grant holds only while its rule does (not shown).
    #[serde(skip)]
    pub(crate) rule_fingerprint: String,
    /// For an MCP endpoint: the tools called that the rule asks for (their arguments are in `calls`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tools: Option<Vec<String>>,
    /// For an MCP endpoint: every tool call of the body with its whole arguments, however long (the excerpt
    /// holds only the body's start), so that the person deciding reads all of what they allow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) calls: Option<Vec<ToolCall>>,
    /// For a GraphQL endpoint: the operations the rule asks for (`mutation AddComment: addComment`; the document is
    /// in the body or the query).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) operations: Option<Vec<String>>,
    /// For a model API whose budget was spent (`on_spent: ask`): the model, and which budget is spent by how much.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) spent: Option<Vec<String>>,
}

/// A tool call of a held MCP request as the approver sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ToolCall {
    /// The tool.
    #[serde(serialize_with = "shown")]
    pub(crate) tool: String,
    /// Its arguments whole, as JSON pretty-printed (one member a line), placeholders redacted; each line shown
    /// as [`unmisleading`](super::unmisleading) writes it (JSON escapes its own control characters).
    #[serde(serialize_with = "shown_lines")]
    pub(crate) arguments: String,
}

/// A request header as the approver sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Header {
    /// Its name (lower case).
    #[serde(serialize_with = "shown")]
    pub(crate) name: String,
    /// Its value, or `[redacted: N bytes]` for a credential.
    #[serde(serialize_with = "shown")]
    pub(crate) value: String,
}

/// What the approver learns of the whole body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct BodySeen {
    /// Its length in bytes.
    pub(crate) length: u64,
    /// Its SHA-256, in hex.
    pub(crate) sha256: String,
}

/// Allow or deny.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Ruling {
    /// Let the request through.
    Allow,
    /// Refuse it.
    Deny,
}

/// How far a decision reaches (the API calls it `scope`). Every grant holds for one incarnation of one sandbox (not a later sandbox given
/// the same id) and only while the rule that asked stays as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Reach {
    /// This request only.
    Once,
    /// This request and, from now on, every one with the same method, host, port and path, whatever its query
    /// and body (allow only).
    Always,
    /// This request and, from now on, every one with the same method, host, port, path, query and body (by its
    /// SHA-256) (allow only).
    Exact,
}

impl Ruling {
    /// `allow` or `deny`, as records write it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Ruling::Allow => "allow",
            Ruling::Deny => "deny",
        }
    }
}

impl Reach {
    /// `once`, `always` or `exact`, as records write it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Reach::Once => "once",
            Reach::Always => "always",
            Reach::Exact => "exact",
        }
    }
}

/// A human's decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct HumanDecision {
    /// Allow or deny.
    pub(crate) verdict: Ruling,
    /// Once or always.
    pub(crate) scope: Reach,
    /// Who decided.
    pub(crate) by: String,
    /// When (RFC 3339).
    pub(crate) at: String,
}

/// How an ask ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resolution {
    /// Someone allowed it.
    Allowed {
        /// The approval's id.
        id: String,
        /// The decision.
        decision: HumanDecision,
        /// How long the request was held.
        waited: Duration,
    },
    /// Someone (or cordon, for a sandbox that is gone) denied it.
    Denied {
        /// The approval's id.
        id: String,
        /// The decision.
        decision: HumanDecision,
        /// How long the request was held.
        waited: Duration,
    },
    /// Nobody decided within the timeout.
    TimedOut {
        /// The approval's id.
        id: String,
        /// How long the request was held.
        waited: Duration,
    },
    /// A standing grant (an earlier `always`) covers it: no one was asked.
    Granted {
        /// The grant's id.
        grant: String,
    },
    /// Too many approvals pending already (bounded); refused at once.
    Full,
    /// The sandbox, or its user, has as many approvals pending as allowed; refused at once.
    Limited {
        /// Which cap.
        over: Over,
        /// The cap.
        max: usize,
        /// When the oldest of those asks times out, so a slot will be free.
        retry_after: Duration,
    },
}

/// Whose cap on pending approvals was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Over {
    /// `approval.max_pending_per_sandbox`.
    Sandbox,
    /// `approval.max_pending_per_user`.
    User,
}

/// A pending approval as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Approval {
    /// The approval's id (`ap-` and 16 hex digits).
    pub id: String,
    /// What is asked.
    #[serde(flatten)]
    pub(crate) ask: HeldRequest,
    /// When it was asked (RFC 3339).
    pub(crate) asked_at: String,
    /// When it times out (RFC 3339).
    pub(crate) expires_at: String,
}

/// A standing grant, made by an `always` or `exact` allow: requests it [covers](super::grants) pass without
/// asking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Grant {
    /// The grant's id (`gr-` and 16 hex digits).
    pub(crate) id: String,
    /// The sandbox incarnation it applies to (not shown).
    #[serde(skip)]
    pub(crate) who: Arc<Sandbox>,
    /// The sandbox's id (written as it is: an id holds only characters [`shown`] leaves alone).
    pub(crate) sandbox: SandboxId,
    /// `always` or `exact`.
    pub(crate) reach: Reach,
    /// The method.
    #[serde(serialize_with = "shown")]
    pub(crate) method: String,
    /// The host (compared without regard to ASCII case).
    #[serde(serialize_with = "shown")]
    pub(crate) host: String,
    /// The port.
    pub(crate) port: u16,
    /// The path.
    #[serde(serialize_with = "shown")]
    pub(crate) path: String,
    /// For `exact`: the query as sent (none: a request without one; not shown: `shown_query` is).
    #[serde(skip)]
    pub(crate) query: Option<String>,
    /// For `exact`: the query with placeholders redacted.
    #[serde(rename = "query", serialize_with = "shown_query")]
    pub(crate) shown_query: Option<String>,
    /// For `exact`: the body's SHA-256.
    pub(crate) body_sha256: Option<String>,
    /// The policy, and the index of its rule, it was given under.
    #[serde(serialize_with = "shown")]
    pub(crate) policy: String,
    /// The rule's index.
    pub(crate) rule: usize,
    /// What the rule said (not shown).
    #[serde(skip)]
    pub(crate) rule_fingerprint: String,
    /// For an MCP endpoint: the tools it covers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tools: Option<Vec<String>>,
    /// For a GraphQL endpoint: the operations it covers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) operations: Option<Vec<String>>,
    /// Who granted it.
    #[serde(serialize_with = "shown")]
    pub(crate) by: String,
    /// When (RFC 3339).
    pub(crate) at: String,
    /// The approval it came from.
    pub(crate) approval: String,
}

/// Why a decision was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum DecideError {
    /// No such pending approval.
    #[error("no pending approval {0:?} (decided already, timed out, or never asked)")]
    NotFound(String),
    /// The decision itself is not acceptable.
    #[error("{0}")]
    Invalid(String),
}
