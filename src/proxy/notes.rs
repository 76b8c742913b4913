//! What a dry run found at each step, for `cordon explain` to print, and how the live exchange would end.
//!
//! A dry run goes on past a refusal to show every reason, but live traffic stops at the first: every note that
//! refuses carries the refusal as live traffic would answer it, and [`Ending::of`] reads the notes the way the
//! live exchange runs (stopping at the first refusal), so `explain` and the audit record say the same thing.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::audit::Verdict;
use crate::error::ProxyError;
use crate::locks::Unpoisoned;
use crate::names::CredentialName;
use crate::policy::{DenyReason, Mode, TlsMode};

/// A refusal as live traffic would answer it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DryRefusal {
    /// The HTTP status the client would get.
    pub(crate) status: u16,
    /// The reason code (the audit record's `reason`).
    pub(crate) code: &'static str,
    /// What it says.
    pub(crate) message: String,
    /// Whether the audit record would say `deny` (a refusal), rather than keep the decision (a failure).
    pub(crate) deny: bool,
}

impl DryRefusal {
    /// The refusal live traffic answers with for `e`.
    pub(crate) fn of(e: &ProxyError) -> DryRefusal {
        DryRefusal {
            status: e.status().as_u16(),
            code: e.reason().code(),
            message: e.to_string(),
            deny: e.is_refusal(),
        }
    }
}

/// One step's finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Note {
    /// The policy's decision: the allowing rule, or why it denies (or would, in report mode).
    Decided {
        /// The allowing rule.
        rule: Option<usize>,
        /// Why not, if not.
        deny: Option<(DenyReason, String)>,
        /// Whether the policy enforces or only reports.
        mode: Mode,
        /// The refusal live traffic gets, when the policy refuses.
        refused: Option<DryRefusal>,
    },
    /// A refusal at another step.
    Refused(DryRefusal),
    /// The request is for cordon's own name (`access.cordon.internal`): cordon answers it, nothing is sent.
    AnsweredByCordon,
    /// The address guard on one address the destination resolved to: `None` may be dialled, or the refusal
    /// (any refused address refuses the destination).
    Address(SocketAddr, Option<DryRefusal>),
    /// The destination could not be resolved, or its name is refused.
    Unresolved(DryRefusal),
    /// The destination resolved to no address.
    NoAddress(String, DryRefusal),
    /// What a CONNECT becomes once open: intercepted (each request inside decided again) or a blind tunnel.
    Tunnel(TlsMode),
    /// A rule that asks a human: the request would wait for approval.
    WouldAsk(usize),
    /// A credential of the policy, and what would happen to it.
    Credential(CredentialName, CredentialUse),
    /// The rule's section of a protocol (`mcp:`, `graphql:`) judges each message the request carries.
    Protocol {
        /// The protocol.
        name: &'static str,
        /// The rule (its index).
        rule: usize,
        /// What its section does.
        does: &'static str,
    },
}

impl Note {
    /// The refusal that ends a live exchange here, if this step refuses.
    pub(crate) fn refusal(&self) -> Option<&DryRefusal> {
        match self {
            Note::Decided { refused, .. } => refused.as_ref(),
            Note::Refused(r) | Note::Unresolved(r) | Note::NoAddress(_, r) => Some(r),
            Note::Address(_, r) => r.as_ref(),
            Note::Tunnel(_)
            | Note::WouldAsk(_)
            | Note::Credential(..)
            | Note::Protocol { .. }
            | Note::AnsweredByCordon => None,
        }
    }
}

/// What would happen to one of the policy's credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CredentialUse {
    /// Attached (how).
    Applied(String),
    /// Bound to this request, but an earlier step refuses it: nothing is attached to a refused request.
    Refused,
    /// Bound elsewhere.
    NotBound,
    /// Bound here, but the request is cleartext: nothing is ever attached to it.
    Cleartext,
}

/// The notes of one dry run, shared with whoever reads them afterwards.
#[derive(Debug, Clone, Default)]
pub(crate) struct Notes(Arc<Mutex<Vec<Note>>>);

impl Notes {
    /// Add one.
    pub(crate) fn push(&self, note: Note) {
        self.0.lock().unpoisoned().push(note);
    }

    /// Whether a step so far refuses the request (live, it would have ended there).
    pub(crate) fn refused(&self) -> bool {
        self.0.lock().unpoisoned().iter().any(|n| n.refusal().is_some())
    }

    /// Everything noted, in order.
    pub(crate) fn take(&self) -> Vec<Note> {
        std::mem::take(&mut *self.0.lock().unpoisoned())
    }
}

/// How the live exchange would end, in the audit record's words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Ending {
    /// `allow`, `deny` or `would_deny`.
    pub(crate) decision: Verdict,
    /// The reason code: the refusal's, or what report mode let through.
    pub(crate) reason: Option<&'static str>,
    /// The allowing rule.
    pub(crate) rule: Option<usize>,
    /// The status cordon answers itself: a refusal's, or 200 to a CONNECT it opens; `None` when the request
    /// goes upstream (the upstream answers).
    pub(crate) status: Option<u16>,
    /// The credentials attached (names).
    pub(crate) credentials: Vec<crate::names::CredentialName>,
    /// For a CONNECT that opens: `intercept` or `tunnel`.
    pub(crate) tls: Option<&'static str>,
}

impl Ending {
    /// Read `notes` as the live exchange runs: in order, stopping at the first refusal.
    pub(crate) fn of(notes: &[Note]) -> Ending {
        let mut end = Ending {
            decision: Verdict::Deny,
            reason: None,
            rule: None,
            status: None,
            credentials: Vec::new(),
            tls: None,
        };
        for note in notes {
            if let Some(r) = note.refusal() {
                if r.deny {
                    end.decision = Verdict::Deny;
                }
                end.reason = Some(r.code);
                end.status = Some(r.status);
                end.credentials.clear();
                end.tls = None;
                return end;
            }
            match note {
                Note::Decided { rule, deny, .. } => {
                    end.rule = *rule;
                    end.reason = deny.as_ref().map(|(d, _)| d.reason().code());
                    end.decision = if deny.is_some() {
                        Verdict::WouldDeny
                    } else {
                        Verdict::Allow
                    };
                }
                Note::Tunnel(tls) => {
                    end.tls = Some(tls.as_str());
                    end.status = Some(200);
                }
                Note::Credential(name, CredentialUse::Applied(_)) => end.credentials.push(name.clone()),
                _ => {}
            }
        }
        end
    }
}

#[cfg(test)]
#[path = "notes_tests.rs"]
mod tests;
