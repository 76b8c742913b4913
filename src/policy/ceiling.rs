//! The ceiling of a sandbox's own policy: an inline policy `extends` a named one and may only narrow it.
//!
//! Every rule of the inline policy must lie inside one rule of the base: a host the base rule's pattern covers
//! (an exact name under its `*.suffix`, a deeper suffix under a shallower one), ranges inside its ranges, a
//! subset of its ports, of its methods (when it limits them) and of its paths (when it limits them), the same
//! TLS mode, and `ask` where the base says `ask`. Its credentials are a subset of the base's, and it may not
//! report where the base enforces. Path globs are compared conservatively: a path is inside the base's when it
//! is one of them, a literal path one of them matches, or lies under a `prefix/**` of the base; anything else is
//! refused rather than guessed.

use super::allowlist::{Action, HostPattern, Rule};
use super::{Mode, Policy};

/// One way an inline policy goes past its base, with the JSON path of what does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Exceeds {
    /// E.g. `policy.allow[1].ports`.
    pub(crate) path: String,
    /// What exceeds the base, and what the base allows.
    pub(crate) message: String,
}

/// Everything in `inline` that `base` does not allow; empty when `inline` only narrows `base`. `at` is the JSON
/// path of the inline policy (e.g. `policy`).
pub(crate) fn exceeds(inline: &Policy, base: &Policy, at: &str) -> Vec<Exceeds> {
    let mut out = Vec::new();
    let mut push = |path: String, message: String| out.push(Exceeds { path, message });
    if inline.mode == Mode::Report && base.mode == Mode::Enforce {
        push(
            format!("{at}.mode"),
            format!("\"report\" would let through what {:?} refuses; it enforces", base.name),
        );
    }
    for (i, name) in inline.credentials.iter().enumerate() {
        if !base.credentials.contains(name) {
            push(
                format!("{at}.credentials[{i}]"),
                format!(
                    "{name:?} is not a credential {:?} allows (it allows: {})",
                    base.name,
                    list(&base.credentials)
                ),
            );
        }
    }
    for (i, rule) in inline.rules.iter().enumerate() {
        if let Err((field, why)) = within_some(rule, base) {
            push(format!("{at}.allow[{i}]{field}"), why);
        }
    }
    out
}

/// `Ok` if some rule of `base` holds all of `rule`; otherwise the field that goes furthest past the best
/// candidate and why.
fn within_some(rule: &Rule, base: &Policy) -> Result<(), (&'static str, String)> {
    let candidates: Vec<(usize, &Rule)> = base
        .rules
        .iter()
        .enumerate()
        .filter(|(_, b)| destination_within(rule, b))
        .collect();
    if candidates.is_empty() {
        let (field, what) = match &rule.host {
            Some(h) => (".host", h.to_string()),
            None => (".cidrs", ranges(&rule.cidrs)),
        };
        return Err((field, format!("{what} is not a destination {:?} allows", base.name)));
    }
    let mut first_reason = None;
    for (index, b) in &candidates {
        match rest_within(rule, b) {
            Ok(()) => return Ok(()),
            Err((field, why)) => {
                first_reason.get_or_insert((field, format!("{why} (rule {index} of {:?})", base.name)));
            }
        }
    }
    Err(first_reason.unwrap_or(("", format!("no rule of {:?} allows all of this rule", base.name))))
}

/// Whether `rule`'s destination (host pattern or ranges) lies inside `b`'s.
fn destination_within(rule: &Rule, b: &Rule) -> bool {
    match (&rule.host, &b.host) {
        (Some(mine), Some(theirs)) => host_within(mine, theirs),
        (None, None) => {
            !rule.cidrs.is_empty()
                && rule
                    .cidrs
                    .iter()
                    .all(|mine| b.cidrs.iter().any(|theirs| theirs.contains(mine)))
        }
        _ => false,
    }
}

/// Whether every name `mine` matches is matched by `theirs`.
pub(crate) fn host_within(mine: &HostPattern, theirs: &HostPattern) -> bool {
    let under = |name: &str, suffix: &str| name.len() > suffix.len() + 1 && name.ends_with(&format!(".{suffix}"));
    match (mine, theirs) {
        (HostPattern::Exact(a), HostPattern::Exact(b)) => a == b,
        (HostPattern::Exact(a), HostPattern::Subdomains(s)) => under(a, s),
        (HostPattern::Subdomains(t), HostPattern::Subdomains(s)) => t == s || under(t, s),
        (HostPattern::Subdomains(_), HostPattern::Exact(_)) => false,
    }
}

/// Ports, methods, paths, TLS mode and action of `rule` inside `b`'s (its destination is).
fn rest_within(rule: &Rule, b: &Rule) -> Result<(), (&'static str, String)> {
    if let Some(p) = rule.ports.iter().find(|p| !b.ports.contains(p)) {
        return Err((
            ".ports",
            format!("port {p} is not allowed (ports allowed: {})", list(&b.ports)),
        ));
    }
    if let Some(allowed) = &b.methods {
        match &rule.methods {
            None => {
                return Err((
                    ".methods",
                    format!("any method is more than {} allows; list the methods", list(allowed)),
                ));
            }
            Some(mine) => {
                if let Some(m) = mine.iter().find(|m| !allowed.contains(m)) {
                    return Err((
                        ".methods",
                        format!("{m} is not allowed (methods allowed: {})", list(allowed)),
                    ));
                }
            }
        }
    }
    if let Some(set) = &b.paths {
        if rule.path_texts.is_empty() {
            return Err((
                ".paths",
                format!("any path is more than {} allows; list the paths", list(&b.path_texts)),
            ));
        }
        if let Some(p) = rule.path_texts.iter().find(|p| !path_within(p, &b.path_texts, set)) {
            return Err((
                ".paths",
                format!(
                    "{p:?} is not inside the paths allowed ({}); use one of them, a literal path they match, or a \
                     glob under one of their \"prefix/**\"",
                    list(&b.path_texts)
                ),
            ));
        }
    }
    if rule.tls != b.tls {
        return Err((
            ".tls",
            format!(
                "must be {:?} as in the base rule: the other mode changes what cordon sees and may inject",
                tls_name(b.tls)
            ),
        ));
    }
    if rule.action == Action::Allow && b.action == Action::Ask {
        return Err((
            ".action",
            "\"allow\" would skip the approval the base rule asks for; write \"ask\"".into(),
        ));
    }
    Ok(())
}

/// Whether every path the glob `mine` matches is matched by one of `theirs` (conservatively: see the module).
fn path_within(mine: &str, theirs: &[String], set: &globset::GlobSet) -> bool {
    let is_glob = |p: &str| p.contains(['*', '?', '[', '{', '\\']);
    if theirs.iter().any(|t| t == mine) {
        return true;
    }
    if !is_glob(mine) {
        return set.is_match(mine);
    }
    theirs.iter().any(|t| {
        t.strip_suffix("**")
            .filter(|prefix| prefix.ends_with('/') && !is_glob(prefix))
            .is_some_and(|prefix| mine.starts_with(prefix))
    })
}

fn tls_name(t: super::TlsMode) -> &'static str {
    match t {
        super::TlsMode::Intercept => "intercept",
        super::TlsMode::Tunnel => "tunnel",
    }
}

fn list<T: std::fmt::Display>(items: &[T]) -> String {
    if items.is_empty() {
        return "none".into();
    }
    items.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

fn ranges(nets: &[ipnet::IpNet]) -> String {
    list(nets)
}

#[cfg(test)]
#[path = "ceiling_tests.rs"]
mod tests;
