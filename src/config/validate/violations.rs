//! Validation of `policies.NAME.on_violation` and of credential budgets.

use std::time::Duration;

use super::fields::{Errors, duration};
use crate::config::raw::{RawBudget, RawOnViolation};
use crate::config::violations::{CredentialBudget, OnViolation, ViolationAction, ViolationKind};

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
        let n = super::fields::whole(errs, &format!("{at}.{}", kind.as_str()), n, super::fields::A_COUNT);
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
    let given = super::fields::whole(
        errs,
        &format!("{at}.requests"),
        raw.requests.clone(),
        super::fields::A_COUNT,
    );
    let requests = given.and_then(|n| match u64::try_from(n) {
        Ok(n) if n >= 1 => Some(n),
        _ => {
            errs.at(format!("{at}.requests"), format!("{n} must be at least 1"));
            None
        }
    });
    let bytes = super::limits::bytes(errs, &format!("{at}.bytes"), raw.bytes);
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
