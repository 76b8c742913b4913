//! A sandbox's own policy, sent to the admin API as JSON: validated by the code that validates `policies:` in
//! the file (the same messages), with the JSON path of each offending value, then held to its ceiling: the
//! named policy it `extends`, which it may only narrow.

use serde::Deserialize;

use super::assemble::Config;
use super::errors::Errors;
use super::policies::{RawRule, policy};
use crate::policy::Policy;

/// A sandbox's own policy as the admin API receives it (`POST /v1/sandboxes`, `PATCH /v1/sandboxes/{id}`): the
/// named policy it narrows, and rules written exactly as under `policies:`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a policy: a mapping with extends, allow...")]
pub(super) struct RawInline {
    /// The policy of the file it narrows (its ceiling).
    pub(crate) extends: String,
    /// `enforce` (default) or `report` (only where the base reports).
    pub(crate) mode: Option<String>,
    /// Ordered allow rules.
    #[serde(default)]
    pub(crate) allow: Vec<RawRule>,
    /// Credentials it may use; absent: the base's.
    pub(crate) credentials: Option<Vec<String>>,
    /// Refused with a message when present at all (even `null`): the base's narrowing applies.
    #[serde(default, deserialize_with = "present")]
    pub(crate) credential_scope: bool,
}

/// True for a member that is there, whatever its value (`null` included).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| true)
}

/// What is wrong with an inline policy, at which JSON path (`policy.allow[0].host`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldError {
    /// The offending value's path, from the request body's root.
    pub(crate) path: String,
    /// What is wrong and what would be right.
    pub(crate) message: String,
    /// True when the value is valid but goes past the base policy (the ceiling).
    pub(crate) exceeds: bool,
}

/// A validated inline policy, within its base.
#[derive(Debug, Clone)]
pub(crate) struct InlinePolicy {
    /// The base's name.
    pub(crate) extends: String,
    /// The compiled policy (named `id (inline, extends base)` in logs), with the base's credential narrowing.
    pub(crate) policy: Policy,
    /// What is accepted but probably not meant (`policy.allow[0].methods[0]: …`).
    pub(crate) warnings: Vec<String>,
}

/// Validate `doc` (the value of the body's `policy` field, at JSON path `at`) as the inline policy of sandbox
/// `id` under `config`. Every error is returned, none applied.
pub(crate) fn inline_policy(
    config: &Config,
    id: &str,
    at: &str,
    doc: &serde_json::Value,
) -> Result<InlinePolicy, Vec<FieldError>> {
    let invalid = |path: String, message: String| FieldError {
        path,
        message,
        exceeds: false,
    };
    let raw: RawInline = serde_path_to_error::deserialize(doc).map_err(|e| {
        let inner = e.path().to_string();
        let path = if inner == "." {
            at.to_string()
        } else {
            format!("{at}.{inner}")
        };
        vec![invalid(path, e.into_inner().to_string())]
    })?;
    let Some(base) = config.policies.get(&raw.extends) else {
        let known: Vec<&str> = config.policies.keys().map(String::as_str).collect();
        return Err(vec![invalid(
            format!("{at}.extends"),
            format!(
                "there is no policy {:?} to extend; the policies are: {}",
                raw.extends,
                known.join(", ")
            ),
        )]);
    };
    let mut errs = Errors {
        file: String::new(),
        list: Vec::new(),
        warnings: Vec::new(),
        base: crate::config::paths::Base::AsWritten,
    };
    if raw.credential_scope {
        errs.at(
            format!("{at}.credential_scope"),
            format!(
                "cannot be set inline: {:?}'s credential_scope applies to the credentials this policy keeps",
                raw.extends
            ),
        );
    }
    let name = format!("{id} (inline, extends {})", raw.extends);
    let compiled = policy(&mut errs, at, name, raw.mode.as_deref(), raw.allow);
    let mut errors: Vec<FieldError> = errs.list.into_iter().map(|e| invalid(e.path, e.message)).collect();
    let Some(mut compiled) = compiled.filter(|_| errors.is_empty()) else {
        return Err(errors);
    };
    compiled.credentials = match raw.credentials {
        Some(list) => list.into_iter().map(crate::names::CredentialName::from).collect(),
        None => base.credentials.clone(),
    };
    // SECURITY: a sandbox's own policy never allows what its base does not: every rule, credential and the mode
    // are held to the base here, at creation, at each PATCH and again under every new configuration.
    errors.extend(
        crate::policy::ceiling::exceeds(&compiled, base, at)
            .into_iter()
            .map(|e| FieldError {
                path: e.path,
                message: e.message,
                exceeds: true,
            }),
    );
    if !errors.is_empty() {
        return Err(errors);
    }
    // A sandbox's own policy exposes what its base exposes.
    compiled.expose = base.expose.clone();
    compiled.credential_scope = base
        .credential_scope
        .iter()
        .filter(|(c, _)| compiled.credentials.iter().any(|n| n == *c))
        .map(|(c, s)| (c.clone(), s.clone()))
        .collect();
    let warnings = errs
        .warnings
        .into_iter()
        .map(|w| w.trim_start_matches(": ").to_string())
        .collect();
    Ok(InlinePolicy {
        extends: raw.extends,
        policy: compiled,
        warnings,
    })
}

#[cfg(test)]
#[path = "inline_tests.rs"]
mod tests;
