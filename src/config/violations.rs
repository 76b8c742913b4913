//! What bounds a sandbox beyond its rules: `policies.NAME.on_violation` (what happens to a sandbox that keeps being
//! refused for what looks like probing for secrets, counted per kind within a window), and credential usage
//! budgets (`credentials.NAME.budget`, `policies.NAME.credential_budget`). As written and validated.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::errors::Errors;
use super::fields::{A_COUNT, bytes, duration, whole};
use super::scalars::Whole;
use super::shapes;
use crate::names::CredentialName;

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
    pub(crate) fn of(&self, policy: &str, credential: &CredentialName) -> Option<&CredentialBudget> {
        if self.credentials.is_empty() && self.policies.is_empty() {
            return None;
        }
        let base = policy.split('+').next().unwrap_or(policy);
        self.policies
            .get(&(base.to_owned(), credential.to_string()))
            .or_else(|| self.credentials.get(credential.as_str()))
    }
}

/// `policies.NAME.on_violation:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawOnViolation {
    /// The window the thresholds count in.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) window: Option<String>,
    /// Placeholders or secrets sent off their binding.
    pub(crate) exfiltration: Option<Whole>,
    /// Metadata names or addresses.
    pub(crate) metadata: Option<Whole>,
    /// Private and special ranges, cordon itself.
    pub(crate) private: Option<Whole>,
    /// Any other refusal by the policy.
    pub(crate) denied: Option<Whole>,
    /// `revoke` or `hold`.
    #[schemars(with = "Option<shapes::ViolationAction>")]
    pub(crate) action: Option<String>,
}

/// `budget:` of a credential (or a policy's override).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a budget such as { requests: 1000, window: 1h }")]
pub(super) struct RawBudget {
    /// Requests it may be applied to per window.
    pub(crate) requests: Option<Whole>,
    /// Bytes (both ways) per window, e.g. `100MiB`.
    #[schemars(with = "Option<shapes::Size>")]
    pub(crate) bytes: Option<String>,
    /// The window, e.g. `1h`.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) window: Option<String>,
    /// `sandbox` (default) or `user`.
    #[schemars(with = "Option<shapes::BudgetPer>")]
    pub(crate) per: Option<String>,
}

/// `on_violation` of the policy at `base`: a window, at least one threshold, and an action.
pub(super) fn on_violation(errs: &mut Errors, base: &str, raw: RawOnViolation) -> Option<OnViolation> {
    let at = format!("{base}.on_violation");
    let window = duration(errs, &format!("{at}.window"), raw.window, Duration::from_secs(600));
    let mut thresholds = Vec::new();
    for (kind, n) in [
        (ViolationKind::Exfiltration, raw.exfiltration),
        (ViolationKind::Metadata, raw.metadata),
        (ViolationKind::Private, raw.private),
        (ViolationKind::Denied, raw.denied),
    ] {
        let n = whole(errs, &format!("{at}.{}", kind.as_str()), n, A_COUNT);
        match n.map(u32::try_from) {
            None => {}
            Some(Ok(n)) if n >= 1 => thresholds.push((kind, n)),
            Some(_) => errs.at(
                format!("{at}.{}", kind.as_str()),
                format!(
                    "{} must be at least 1 (refusals within the window); leave it out not to count {}",
                    n.unwrap_or_default(),
                    kind.as_str()
                ),
            ),
        }
    }
    let action = match raw.action.as_deref() {
        Some("revoke") => Some(ViolationAction::Revoke),
        Some("hold") => Some(ViolationAction::Hold),
        Some(other) => {
            errs.at(
                format!("{at}.action"),
                format!("{other:?} is not an action; write revoke or hold"),
            );
            None
        }
        None => {
            errs.at(format!("{at}.action"), "is missing; write revoke or hold");
            None
        }
    };
    if thresholds.is_empty() {
        errs.at(
            &at,
            "counts nothing; give at least one threshold: exfiltration, metadata, private or denied",
        );
        return None;
    }
    Some(OnViolation {
        window,
        thresholds,
        action: action?,
    })
}

/// `credentials.NAME.budget` or `policies.P.credential_budget.NAME`, at `at`.
pub(super) fn budget(errs: &mut Errors, at: &str, raw: RawBudget) -> Option<CredentialBudget> {
    let given = whole(errs, &format!("{at}.requests"), raw.requests.clone(), A_COUNT);
    let requests = given.and_then(|n| match u64::try_from(n) {
        Ok(n) if n >= 1 => Some(n),
        _ => {
            errs.at(format!("{at}.requests"), format!("{n} must be at least 1"));
            None
        }
    });
    let bytes = bytes(errs, &format!("{at}.bytes"), raw.bytes);
    let window = duration(errs, &format!("{at}.window"), raw.window, Duration::from_secs(3600));
    if window < Duration::from_secs(1) {
        errs.at(format!("{at}.window"), "must be at least 1s");
    }
    let per_user = match raw.per.as_deref() {
        None | Some("sandbox") => false,
        Some("user") => true,
        Some(other) => {
            errs.at(
                format!("{at}.per"),
                format!("{other:?} is not a subject; write sandbox or user"),
            );
            false
        }
    };
    if raw.requests.is_none() && bytes.is_none() {
        errs.at(at, "limits nothing; give requests, bytes or both");
        return None;
    }
    Some(CredentialBudget {
        budget: crate::limits::Budget {
            requests,
            bytes,
            window,
        },
        per_user,
    })
}
