//! `policies.NAME.access:`: whether the policy's sandboxes may ask, from inside, for access past it (up to its
//! `boundary:`), and on what terms; and the `allow` list of such a request, read as a policy's rules are.

use std::num::NonZeroU32;
use std::time::Duration;

use serde_json::Value;

use super::errors::Errors;
use super::fields::{A_COUNT, duration, flag, whole};
use super::policies::{RawAccess, RawRule, policy};
use crate::policy::{AccessTerms, Policy, Rule};

/// The longest `max_lifetime` may be.
const MOST_LIFETIME: Duration = Duration::from_secs(7 * 24 * 3600);
/// The most rules one request may ask for.
pub(crate) const MOST_RULES: usize = 16;

/// Each policy's `access:`, onto the policy; an error where a policy offers it without a boundary to hold grants
/// to, or where the store is shared by replicas (requests and grants are kept by the replica they reach).
pub(super) fn access(
    errs: &mut Errors,
    raw: std::collections::BTreeMap<String, RawAccess>,
    policies: &mut std::collections::BTreeMap<String, Policy>,
    shared_store: bool,
) {
    for (name, raw) in raw {
        let at = format!("policies.{name}.access");
        let before = errs.list.len();
        let auto_grant = flag(errs, &format!("{at}.auto_grant"), raw.auto_grant).unwrap_or(false);
        let max_lifetime = duration(
            errs,
            &format!("{at}.max_lifetime"),
            raw.max_lifetime,
            Duration::from_secs(3600),
        );
        if max_lifetime > MOST_LIFETIME {
            errs.at(
                format!("{at}.max_lifetime"),
                format!("must be at most {}", humantime::format_duration(MOST_LIFETIME)),
            );
        }
        let per_hour = match whole(errs, &format!("{at}.per_hour"), raw.per_hour, A_COUNT) {
            None => NonZeroU32::new(10),
            Some(n) => {
                let got = u32::try_from(n).ok().and_then(NonZeroU32::new);
                if got.is_none() {
                    errs.at(
                        format!("{at}.per_hour"),
                        format!("{n} is not a count from 1 to 4294967295"),
                    );
                }
                got
            }
        };
        if shared_store {
            errs.at(
                &at,
                "asking for access is kept by the replica a request reaches, so it cannot be offered with a store \
                 shared by replicas (control.store: postgres://...); remove `access:` or the shared store",
            );
        }
        let Some(p) = policies.get_mut(&name) else { continue };
        if p.boundary.is_none() {
            errs.at(
                &at,
                format!(
                    "needs policies.{name}.boundary: the most a sandbox of the policy may be granted, which every \
                     grant is held to"
                ),
            );
        }
        if let (Some(per_hour), true) = (per_hour, errs.list.len() == before) {
            p.access = Some(AccessTerms {
                auto_grant,
                max_lifetime,
                per_hour,
            });
        }
    }
}

/// The `allow` list of an access request (`value`, JSON), compiled as a policy's rules are, with errors at
/// `allow[i]...` paths. A request names hosts only (no `cidrs`), asks nobody (no `action: ask`), and names at
/// most [`MOST_RULES`] rules.
pub(crate) fn requested_rules(value: &Value) -> Result<Vec<Rule>, Vec<String>> {
    let list = value
        .as_array()
        .ok_or_else(|| vec!["allow: expected a list of rules, as a policy's `allow:` is written".to_string()])?;
    if list.is_empty() {
        return Err(vec!["allow: is empty; name at least one rule".to_string()]);
    }
    if list.len() > MOST_RULES {
        return Err(vec![format!(
            "allow: {} rules; one request asks for at most {MOST_RULES}",
            list.len()
        )]);
    }
    let mut errs = Errors {
        file: "request".to_string(),
        list: Vec::new(),
        warnings: Vec::new(),
        base: crate::config::paths::Base::AsWritten,
    };
    let mut raw = Vec::new();
    for (i, v) in list.iter().enumerate() {
        match serde_path_to_error::deserialize::<_, RawRule>(v) {
            Ok(r) => {
                if r.cidrs.is_some() {
                    errs.at(
                        format!("allow[{i}].cidrs"),
                        "an access request names hosts, not address ranges",
                    );
                }
                if r.action.is_some() {
                    errs.at(
                        format!("allow[{i}].action"),
                        "an access request asks for access to be allowed; leave `action` out",
                    );
                }
                raw.push(r);
            }
            Err(e) => {
                let path = e.path().to_string();
                let path = if path == "." { String::new() } else { format!(".{path}") };
                errs.at(format!("allow[{i}]{path}"), e.into_inner().to_string());
            }
        }
    }
    let compiled = policy(&mut errs, "", "request".to_string(), None, raw);
    let mut out: Vec<String> = errs
        .list
        .iter()
        .map(|e| format!("{}: {}", e.path.trim_start_matches('.'), e.message))
        .collect();
    out.dedup();
    match compiled {
        Some(p) if out.is_empty() => Ok(p.rules),
        _ if out.is_empty() => Err(vec!["allow: the rules do not compile".to_string()]),
        _ => Err(out),
    }
}
