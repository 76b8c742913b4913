//! What bounds a sandbox beyond its rules: `policies.NAME.on_violation` (what happens to a sandbox that keeps being
//! refused for what looks like probing for secrets, counted per kind within a window), and credential usage
//! budgets (`credentials.NAME.budget`, `policies.NAME.credential_budget`).

use std::time::Duration;

/// The kinds of refusal counted, each from the reason codes a refusal is recorded with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum ViolationKind {
    /// A placeholder or a secret sent where its credential is not bound (`credential_exfiltration`,
    /// `secret_exfiltration`).
    Exfiltration,
    /// A cloud metadata name or address (`metadata_name`, `metadata_address`).
    Metadata,
    /// A private or special-range address, or cordon itself (`special_range`, `self_address`).
    Private,
    /// Any other refusal by the policy (`no_rule`, a method, path or port the rules do not allow, ...).
    Denied,
}

impl ViolationKind {
    /// The name in the configuration, the audit record and the metrics.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ViolationKind::Exfiltration => "exfiltration",
            ViolationKind::Metadata => "metadata",
            ViolationKind::Private => "private",
            ViolationKind::Denied => "denied",
        }
    }

    /// The kind a refusal with reason code `reason` counts as, if any (the watcher first asks the address
    /// guard about the destination: a metadata address refused for having no rule is still `metadata`).
    pub(crate) fn of(reason: &str) -> Option<ViolationKind> {
        use crate::reason::Reason;
        Some(match Reason::from_code(reason)? {
            Reason::CredentialExfiltration | Reason::SecretExfiltration => ViolationKind::Exfiltration,
            Reason::MetadataName | Reason::MetadataAddress => ViolationKind::Metadata,
            Reason::SpecialRange | Reason::SelfAddress => ViolationKind::Private,
            Reason::NoRule | Reason::PortNotAllowed | Reason::MethodNotAllowed | Reason::PathNotAllowed => {
                ViolationKind::Denied
            }
            _ => return None,
        })
    }
}

/// What happens when a threshold is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ViolationAction {
    /// Revoked as through the admin API (a declared sandbox: refused until cordon restarts or the hold is
    /// lifted), its connections closed.
    Revoke,
    /// Every further request needs a person's approval; tunnels cordon cannot look into are refused.
    Hold,
}

impl ViolationAction {
    /// The reason of the record an action leaves.
    pub(crate) fn reason(self) -> crate::reason::Reason {
        match self {
            ViolationAction::Revoke => crate::reason::Reason::OnViolationRevoke,
            ViolationAction::Hold => crate::reason::Reason::OnViolationHold,
        }
    }

    /// The name in the configuration and the records.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ViolationAction::Revoke => "revoke",
            ViolationAction::Hold => "hold",
        }
    }
}

/// A policy's `on_violation`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OnViolation {
    /// The window the thresholds count in.
    pub(crate) window: Duration,
    /// Refusals of each kind within the window that trigger the action (kinds not listed are not counted).
    pub(crate) thresholds: Vec<(ViolationKind, u32)>,
    /// What happens.
    pub(crate) action: ViolationAction,
}

impl OnViolation {
    /// The threshold for `kind`, if it is counted.
    pub(crate) fn threshold(&self, kind: ViolationKind) -> Option<u32> {
        self.thresholds.iter().find(|(k, _)| *k == kind).map(|(_, n)| *n)
    }
}

/// A credential's usage budget (`credentials.NAME.budget`, or a policy's `credential_budget.NAME`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CredentialBudget {
    /// Requests and bytes per window.
    pub(crate) budget: crate::limits::Budget,
    /// Counted per user (over all of the user's sandboxes) rather than per sandbox.
    pub(crate) per_user: bool,
}

/// Every credential budget: each credential's own, and the policies' overrides.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CredentialBudgets {
    /// By credential.
    pub(crate) credentials: std::collections::BTreeMap<String, CredentialBudget>,
    /// By (policy, credential): replaces the credential's own for that policy's sandboxes.
    pub(crate) policies: std::collections::BTreeMap<(String, String), CredentialBudget>,
}

impl CredentialBudgets {
    /// The budget of `credential` for a sandbox of `policy` (its base's, for a sandbox's own policy).
    pub(crate) fn of(&self, policy: &str, credential: &str) -> Option<&CredentialBudget> {
        if self.credentials.is_empty() && self.policies.is_empty() {
            return None;
        }
        let base = policy.split('+').next().unwrap_or(policy);
        self.policies
            .get(&(base.to_owned(), credential.to_owned()))
            .or_else(|| self.credentials.get(credential))
    }
}
