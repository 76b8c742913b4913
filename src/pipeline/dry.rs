//! What a dry run found at each step, for `cordon explain` to print.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use crate::policy::{DenyReason, Mode};

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
    },
    /// A refusal: status, reason code and message.
    Refused(u16, &'static str, String),
    /// The address guard on one address the destination resolved to: `None` may be dialled, or the refusal's
    /// code and message.
    Address(SocketAddr, Option<(&'static str, String)>),
    /// The destination could not be resolved, or its name is refused: code and message.
    Unresolved(&'static str, String),
    /// The destination resolved to no address.
    NoAddress(String),
    /// A rule that asks a human: the request would wait for approval.
    WouldAsk(usize),
    /// A credential of the policy, and what would happen to it.
    Credential(String, CredentialUse),
}

/// What would happen to one of the policy's credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CredentialUse {
    /// Attached (how).
    Applied(String),
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
        self.0.lock().unwrap_or_else(PoisonError::into_inner).push(note);
    }

    /// Everything noted, in order.
    pub(crate) fn take(&self) -> Vec<Note> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}
