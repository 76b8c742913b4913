//! The approval types: what is asked, what was decided, how an ask ended, and the standing grants.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The longest excerpt kept, in characters.
pub(crate) const MAX_EXCERPT: usize = 256;

/// What is being asked about. Nothing secret: cordon's own credentials are attached only after approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Ask {
    /// The sandbox that sent the request.
    pub(crate) sandbox: String,
    /// The user the sandbox belongs to.
    pub(crate) user: String,
    /// The policy that asked.
    pub(crate) policy: String,
    /// The request method.
    pub(crate) method: String,
    /// The destination host.
    pub(crate) host: String,
    /// The destination port.
    pub(crate) port: u16,
    /// The request path.
    pub(crate) path: String,
    /// At most [`MAX_EXCERPT`] printable characters of the body (see [`excerpt`]); cleaned again on [`Approvals::ask`](super::Approvals::ask).
    pub(crate) excerpt: String,
    /// The index of the policy rule that asked.
    pub(crate) rule: usize,
}

/// Allow or deny.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Verdict {
    /// Let the request through.
    Allow,
    /// Refuse it.
    Deny,
}

/// How far a decision reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Scope {
    /// This request only.
    Once,
    /// This request and, from now on, every identical one from the same sandbox (allow only).
    Always,
}

/// A human's decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Decision {
    /// Allow or deny.
    pub(crate) verdict: Verdict,
    /// Once or always.
    pub(crate) scope: Scope,
    /// Who decided.
    pub(crate) by: String,
    /// When (RFC 3339).
    pub(crate) at: String,
}

/// How an ask ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Someone allowed it.
    Allowed {
        /// The approval's id.
        id: String,
        /// The decision.
        decision: Decision,
        /// How long the request was held.
        waited: Duration,
    },
    /// Someone (or cordon, for a sandbox that is gone) denied it.
    Denied {
        /// The approval's id.
        id: String,
        /// The decision.
        decision: Decision,
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
}

/// A pending approval as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pending {
    /// The approval's id (`ap-` and 16 hex digits).
    pub id: String,
    /// What is asked.
    #[serde(flatten)]
    pub(crate) ask: Ask,
    /// When it was asked (RFC 3339).
    pub(crate) asked_at: String,
    /// When it times out (RFC 3339).
    pub(crate) expires_at: String,
}

/// A standing grant: requests with exactly this sandbox, method, host, port and path pass without asking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Grant {
    /// The grant's id (`gr-` and 16 hex digits).
    pub(crate) id: String,
    /// The sandbox it applies to.
    pub(crate) sandbox: String,
    /// The method.
    pub(crate) method: String,
    /// The host (compared without regard to ASCII case).
    pub(crate) host: String,
    /// The port.
    pub(crate) port: u16,
    /// The path.
    pub(crate) path: String,
    /// Who granted it.
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

/// An excerpt of a request body for an [`Ask`]: its first [`MAX_EXCERPT`] characters (invalid UTF-8 replaced),
/// printable only.
pub(crate) fn excerpt(body: &[u8]) -> String {
    let head = &body[..body.len().min(MAX_EXCERPT * 4)];
    clean(&String::from_utf8_lossy(head))
}

/// At most [`MAX_EXCERPT`] characters; line breaks and tabs become spaces, and other control characters, bidi
/// overrides and invisible characters (which could mislead the person deciding) become `.`.
pub(super) fn clean(text: &str) -> String {
    text.chars()
        .take(MAX_EXCERPT)
        .map(|c| match c {
            '\n' | '\r' | '\t' => ' ',
            '\u{61C}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}' => '.',
            c if c.is_control() => '.',
            c => c,
        })
        .collect()
}
