//! Which rules' host patterns match a name: exact names in one hash map, `*.suffix` patterns in another keyed
//! by the suffix. A name is looked up once as it is and once for each suffix after one of its dots (a
//! `*.suffix` pattern matches one or more labels under the suffix, never the suffix itself), so a lookup costs a
//! hash per label of the name, whatever the number of rules. The same answers as the glob matcher it replaced
//! (a property test holds them to it).

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

    /// The rules whose host pattern matches `name` (a normalised name), in order.
    pub(crate) fn matches(&self, name: &str) -> Vec<usize> {
        let mut hits: Vec<usize> = self.exact.get(name).cloned().unwrap_or_default();
        if !self.subdomains.is_empty() {
            for (at, _) in name.match_indices('.') {
                if let Some(rules) = self.subdomains.get(&name[at + 1..]) {
                    hits.extend_from_slice(rules);
                }
            }
        }
        hits.sort_unstable();
        hits.dedup();
        hits
    }
}
