//! Checks of what the admin API is given for a new sandbox: its owner and labels.

use std::collections::BTreeMap;

use super::{ControlError, invalid};

pub(super) fn check_user(user: &str) -> Result<(), ControlError> {
    if user.is_empty() || user.chars().count() > 128 || user.chars().any(char::is_control) {
        return Err(invalid("user", "must be 1-128 characters without control characters"));
    }
    Ok(())
}

pub(super) fn check_labels(labels: &BTreeMap<String, String>) -> Result<(), ControlError> {
    if labels.len() > 32 {
        return Err(invalid("labels", "at most 32 labels"));
    }
    for (k, v) in labels {
        let key_ok =
            !k.is_empty() && k.len() <= 63 && k.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b));
        if !key_ok {
            return Err(invalid(
                "labels",
                format!("{k:?} is not a label key; use 1-63 letters, digits, '-', '_', '.' or '/'"),
            ));
        }
        if v.chars().count() > 256 || v.chars().any(char::is_control) {
            return Err(invalid(
                "labels",
                format!("the value of {k:?} must be at most 256 characters without control characters"),
            ));
        }
    }
    Ok(())
}
