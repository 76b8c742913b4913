//! The ceiling of a sandbox's own policy: an inline policy `extends` a named one and may only narrow it.
//!
//! The base is held to what it would decide, not to any rule that happens to contain an own rule: for a host, the
//! base's most specific matching pattern governs (see [`Policy::governing`]), so an own rule is judged against
//! every part of its destination that a different set of the base's rules governs: the destination as a whole,
//! and each more specific base pattern or range inside it. In each part, the base rule that would answer a
//! CONNECT on each of the own rule's ports must have its TLS mode; an intercepted own rule must lie inside one
//! governing intercept rule of the base (a subset of its ports, of its methods when it limits them, of its paths
//! when it limits them), and ask wherever a base rule that could answer first for the same requests asks. Its credentials are a subset of the base's, and it may not
//! report where the base enforces. Path globs are compared conservatively: a path is inside the base's when it
//! is one of them, a literal path one of them matches, or lies under a `prefix/**` of the base; anything else is
//! refused rather than guessed.

use super::allowlist::{Action, HostPattern, Rule};
pub(crate) use super::hosts::host_within;
use super::witness::{CredentialBound, LookIn, Witness, find};
use super::{Mode, Policy, TlsMode};

/// One way an inline policy goes past its base, with the JSON path of what does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Exceeds {
    /// E.g. `policy.allow[1].ports`.
    pub(crate) path: String,
    /// What exceeds the base, and what the base allows.
    pub(crate) message: String,
    /// A concrete request that shows it: let through by `inline` as `base` does not (both decided live).
    /// `None` where the check is conservative and no request made from the rule shows a difference.
    pub(crate) counterexample: Option<Witness>,
}

/// Everything in `inline` that `base` does not allow; empty when `inline` only narrows `base`. `at` is the JSON
/// path of the inline policy (e.g. `policy`). A credential is taken to be sent wherever a policy that lists it
/// allows an intercepted request (see [`exceeds_bound`]).
pub(crate) fn exceeds(inline: &Policy, base: &Policy, at: &str) -> Vec<Exceeds> {
    exceeds_bound(inline, base, at, &|_, _, _, _| true)
}

/// [`exceeds`], with where each credential may be sent (its `bind:`), for the counterexamples.
pub(crate) fn exceeds_bound(inline: &Policy, base: &Policy, at: &str, bound: CredentialBound<'_>) -> Vec<Exceeds> {
    let mut out = Vec::new();
    let mut push = |path: String, message: String, scope: LookIn| {
        out.push(Exceeds {
            path,
            message,
            counterexample: find(inline, base, scope, bound),
        })
    };
    if inline.mode == Mode::Report && base.mode == Mode::Enforce {
        push(
            format!("{at}.mode"),
            format!("\"report\" would let through what {:?} refuses; it enforces", base.name),
            LookIn::Mode,
        );
    } else if inline.mode == Mode::Report
        && let Some(i) = base
            .rules
            .iter()
            .position(|r| r.mcp.is_some() || r.graphql.is_some() || r.model_api.is_some() || r.action == Action::Ask)
    {
        // A request no rule of `inline` allows is let through unjudged; the base may judge its messages or ask.
        push(
            format!("{at}.mode"),
            format!(
                "\"report\" lets through unjudged and unasked the requests {:?} judges or asks a person for (its \
                 rule {i}) where no rule of this policy allows them",
                base.name
            ),
            LookIn::Mode,
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
                LookIn::Credential(i),
            );
        }
    }
    for (i, rule) in inline.rules.iter().enumerate() {
        if let Err((field, why)) = within_base(rule, base) {
            push(format!("{at}.allow[{i}]{field}"), why, LookIn::Rule(i));
        }
    }
    out
}

/// A part of an own rule's destination that one set of the base's rules governs, as the base decides.
struct Region {
    /// What the part is, for messages: a name, `names under *.x`, or a range.
    what: String,
    /// The base's rules that govern it, in order (empty: the base allows nothing there).
    governing: Vec<usize>,
}

/// The rules of `base` that govern every name `p` matches: those of the most specific base pattern that holds
/// all of them, in order.
fn governing_pattern(base: &Policy, p: &HostPattern) -> Vec<usize> {
    let holders: Vec<(usize, (usize, bool))> = base
        .rules
        .iter()
        .enumerate()
        .filter_map(|(i, b)| {
            b.host
                .as_ref()
                .filter(|t| host_within(p, t))
                .map(|t| (i, t.specificity()))
        })
        .collect();
    let top = holders.iter().map(|(_, s)| *s).max();
    holders
        .iter()
        .filter(|(_, s)| Some(*s) == top)
        .map(|(i, _)| *i)
        .collect()
}

/// The parts of `rule`'s destination that different rules of `base` govern: the destination as a whole
/// (governed by the most specific base pattern or range holding all of it), and each more specific base pattern
/// or range inside it (governing its own names or addresses).
fn regions(rule: &Rule, base: &Policy) -> Vec<Region> {
    let mut out = Vec::new();
    match &rule.host {
        Some(mine) => {
            let whole = match mine {
                HostPattern::Exact(n) => n.clone(),
                HostPattern::Subdomains(_) => format!("names under {mine}"),
            };
            out.push(Region {
                what: whole,
                governing: governing_pattern(base, mine),
            });
            let mut inner: Vec<&HostPattern> = base
                .rules
                .iter()
                .filter_map(|b| b.host.as_ref())
                .filter(|t| *t != mine && host_within(t, mine))
                .collect();
            inner.sort_by_key(|t| t.to_string());
            inner.dedup();
            for t in inner {
                out.push(Region {
                    what: t.to_string(),
                    governing: governing_pattern(base, t),
                });
            }
        }
        None => {
            for mine in &rule.cidrs {
                out.push(Region {
                    what: mine.to_string(),
                    governing: base.governing_net(*mine),
                });
                let mut inner: Vec<ipnet::IpNet> = base
                    .rules
                    .iter()
                    .flat_map(|b| b.cidrs.iter().copied())
                    .filter(|t| t != mine && mine.contains(t))
                    .collect();
                inner.sort_unstable();
                inner.dedup();
                for t in inner {
                    out.push(Region {
                        what: t.to_string(),
                        governing: base.governing_net(t),
                    });
                }
            }
        }
    }
    out
}

/// `Ok` if, for every part of `rule`'s destination, what `base` decides there allows all `rule` does, in the
/// same TLS mode and with approval wherever the base asks; otherwise the field that goes past and why.
fn within_base(rule: &Rule, base: &Policy) -> Result<(), (&'static str, String)> {
    for region in regions(rule, base) {
        within_region(rule, base, &region)?;
    }
    Ok(())
}

/// The check of [`within_base`] for one region: at CONNECT, the base rule that would answer each port of `rule`
/// has `rule`'s TLS mode; for an intercepted rule, one governing intercept rule of the base holds its ports,
/// methods and paths, and no base rule that could answer first for the same requests asks when `rule` does not.
fn within_region(rule: &Rule, base: &Policy, region: &Region) -> Result<(), (&'static str, String)> {
    let name = &base.name;
    let field = if rule.host.is_some() { ".host" } else { ".cidrs" };
    if region.governing.is_empty() {
        return Err((field, format!("{} is not a destination {name:?} allows", region.what)));
    }
    let governing: Vec<(usize, &Rule)> = region
        .governing
        .iter()
        .filter_map(|&i| base.rules.get(i).map(|r| (i, r)))
        .collect();
    for p in &rule.ports {
        let Some((index, first)) = governing.iter().find(|(_, b)| b.ports.contains(p)) else {
            let mut allowed: Vec<u16> = governing.iter().flat_map(|(_, b)| b.ports.iter().copied()).collect();
            allowed.sort_unstable();
            allowed.dedup();
            return Err((
                ".ports",
                format!(
                    "port {p} is not allowed for {} (ports allowed there: {})",
                    region.what,
                    list(&allowed)
                ),
            ));
        };
        if first.tls != rule.tls {
            return Err((
                ".tls",
                format!(
                    "must be {:?}: for {} on port {p}, {name:?} decides by its rule {index}, which is {:?}; the \
                     other mode changes what cordon sees and may inject",
                    first.tls.as_str(),
                    region.what,
                    first.tls.as_str()
                ),
            ));
        }
    }
    if rule.tls == TlsMode::Tunnel {
        // A tunnel rule limits no method or path, and the base tunnels every port of it (above).
        return Ok(());
    }
    let mut first_reason = None;
    for (at, (index, b)) in governing.iter().enumerate() {
        if b.tls != TlsMode::Intercept {
            continue;
        }
        match rest_within(rule, b) {
            Ok(()) => {
                // Of the requests `rule` allows, the base decides each by the first of its rules up to `b` that
                // allows it: if one of those asks, so must `rule`.
                let asking = governing
                    .get(..=at)
                    .unwrap_or_default()
                    .iter()
                    .find(|(_, e)| e.tls == TlsMode::Intercept && e.action == Action::Ask && overlaps(rule, e));
                if rule.action == Action::Allow
                    && let Some((asking, _)) = asking
                {
                    return Err((
                        ".action",
                        format!(
                            "\"allow\" would skip the approval {name:?} asks for {} (its rule {asking}); write \"ask\"",
                            region.what
                        ),
                    ));
                }
                // Likewise, every base rule that could answer first and limits MCP tools or GraphQL operations
                // limits the own rule.
                let first = governing.get(..=at).unwrap_or_default();
                let whom = (name.as_str(), region.what.as_str());
                section(rule, first, whom, &MCP, |r| r.mcp.as_deref(), |m, b| m.within(b))?;
                section(
                    rule,
                    first,
                    whom,
                    &GRAPHQL,
                    |r| r.graphql.as_deref(),
                    |m, b| m.within(b),
                )?;
                section(
                    rule,
                    first,
                    whom,
                    &MODEL_API,
                    |r| r.model_api.as_deref(),
                    |m, b| m.within(b),
                )?;
                return Ok(());
            }
            Err((f, why)) => {
                first_reason.get_or_insert((f, format!("{why} for {} (rule {index} of {name:?})", region.what)));
            }
        }
    }
    Err(first_reason.unwrap_or((
        field,
        format!(
            "no rule of {name:?} that governs {} allows all of this rule",
            region.what
        ),
    )))
}

/// A protocol section of a rule, as the ceiling's errors name it: its key, what it limits, its lists' fields.
struct Section {
    key: &'static str,
    limits: &'static str,
    fields: &'static [&'static str],
}

const MCP: Section = Section {
    key: ".mcp",
    limits: "the MCP tools",
    fields: &[".mcp.tools", ".mcp.ask", ".mcp.deny", ".mcp.methods"],
};

const GRAPHQL: Section = Section {
    key: ".graphql",
    limits: "the GraphQL operations",
    fields: &[".graphql.operations", ".graphql.ask", ".graphql.deny", ".graphql.names"],
};

const MODEL_API: Section = Section {
    key: ".model_api",
    limits: "the models",
    fields: &[".model_api.dialect", ".model_api.models"],
};

/// Whether an own section narrows its base's; the field and why, when not.
type Narrowed = Result<(), (&'static str, String)>;

/// Whether `rule` narrows the section `s` of every base rule in `first` that has one and could answer the same
/// requests (`whom`: the base's name, and what the region is); the field and why, when it does not.
fn section<T>(
    rule: &Rule,
    first: &[(usize, &Rule)],
    (name, what): (&str, &str),
    s: &Section,
    of: fn(&Rule) -> Option<&T>,
    within: fn(&T, &T) -> Narrowed,
) -> Narrowed {
    for (limiting, e) in first {
        let Some(theirs) = of(e).filter(|_| e.tls == TlsMode::Intercept && overlaps(rule, e)) else {
            continue;
        };
        let Some(mine) = of(rule) else {
            return Err((
                s.key,
                format!(
                    "{name:?} limits {} of {what} (its rule {limiting}); repeat its {} section or narrow it",
                    s.limits,
                    &s.key[1..]
                ),
            ));
        };
        within(mine, theirs).map_err(|(list, why)| {
            let field = s.fields.iter().find(|f| f.ends_with(list)).copied().unwrap_or(s.key);
            (field, format!("{why} (rule {limiting} of {name:?})"))
        })?;
    }
    Ok(())
}

/// Whether some request could be allowed by both rules, judged by ports and methods (paths are taken to
/// overlap: conservative).
fn overlaps(a: &Rule, b: &Rule) -> bool {
    let ports = a.ports.iter().any(|p| b.ports.contains(p));
    let methods = match (&a.methods, &b.methods) {
        (Some(x), Some(y)) => x.iter().any(|m| y.contains(m)),
        _ => true,
    };
    ports && methods
}

/// Ports, methods and paths of `rule` inside `b`'s (its destination is; TLS mode and action are judged by
/// [`within_region`]).
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

fn list<T: std::fmt::Display>(items: &[T]) -> String {
    if items.is_empty() {
        return "none".into();
    }
    items.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
#[path = "ceiling_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "ceiling_proptests.rs"]
mod proptests;
