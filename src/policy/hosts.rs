//! Which rules govern a name: exact names in one hash map, `*.suffix` patterns in another keyed by the suffix.
//! A name is looked up once as it is and then once for each suffix after one of its dots, longest first (a
//! `*.suffix` pattern matches one or more labels under the suffix, never the suffix itself), and the first hit is
//! the most specific pattern, whose rules govern; so a lookup costs at most a hash per label of the name, whatever
//! the number of rules. A property test holds it to the glob matcher it replaced, narrowed to the most specific
//! pattern.

use std::collections::HashMap;

use super::allowlist::{HostPattern, Rule};

/// The host patterns of a policy's rules, by what they match.
#[derive(Debug, Clone, Default)]
pub(crate) struct HostIndex {
    /// Exact names, each with its rules in order.
    exact: HashMap<String, Vec<usize>>,
    /// Suffixes of `*.suffix` patterns, each with its rules in order.
    subdomains: HashMap<String, Vec<usize>>,
}

impl HostIndex {
    /// The index of `rules`' host patterns.
    pub(crate) fn new(rules: &[Rule]) -> HostIndex {
        let mut index = HostIndex::default();
        for (i, rule) in rules.iter().enumerate() {
            match &rule.host {
                Some(HostPattern::Exact(name)) => index.exact.entry(name.clone()).or_default().push(i),
                Some(HostPattern::Subdomains(suffix)) => index.subdomains.entry(suffix.clone()).or_default().push(i),
                None => {}
            }
        }
        index
    }

    /// The rules that govern `name` (a normalised name), in order: those of its exact pattern if any rule names
    /// it exactly, else those of the longest `*.suffix` it lies under. Less specific patterns do not answer.
    pub(crate) fn governing(&self, name: &str) -> &[usize] {
        if let Some(rules) = self.exact.get(name) {
            return rules;
        }
        // From the left, the first suffix found is the longest.
        for (at, _) in name.match_indices('.') {
            if let Some(rules) = self.subdomains.get(&name[at + 1..]) {
                return rules;
            }
        }
        &[]
    }
}

/// Whether every name `mine` matches is matched by `theirs` (the ceiling's and the boundary's containment of
/// destinations).
pub(crate) fn host_within(mine: &HostPattern, theirs: &HostPattern) -> bool {
    let under = |name: &str, suffix: &str| name.len() > suffix.len() + 1 && name.ends_with(&format!(".{suffix}"));
    match (mine, theirs) {
        (HostPattern::Exact(a), HostPattern::Exact(b)) => a == b,
        (HostPattern::Exact(a), HostPattern::Subdomains(s)) => under(a, s),
        (HostPattern::Subdomains(t), HostPattern::Subdomains(s)) => t == s || under(t, s),
        (HostPattern::Subdomains(_), HostPattern::Exact(_)) => false,
    }
}
