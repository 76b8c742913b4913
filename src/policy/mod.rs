//! Policies: ordered allow rules, decided purely (no I/O, no clock).
//!
//! The decision is made twice for an HTTPS destination once interception exists: at CONNECT (host and
//! port) and for each inner request (method and path). For plain HTTP both are known at once.

pub mod allowlist;
pub(crate) mod ceiling;
mod decide;
mod globs;
pub mod graphql;
mod hosts;
pub mod mcp;
pub mod model_api;
mod overlaps;
pub(crate) mod protocol;
pub(crate) mod witness;

pub use allowlist::{Action, HostPattern, Rule, TlsMode};
pub use decide::{Decision, DenyReason, Question};

/// A policy's `access:`: its sandboxes may ask, from inside, for access up to its boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AccessTerms {
    /// Grant at once what lies inside the boundary and lets no credential reach anywhere new.
    pub(crate) auto_grant: bool,
    /// The longest a grant may last.
    pub(crate) max_lifetime: std::time::Duration,
    /// How many requests a sandbox may file per hour.
    pub(crate) per_hour: std::num::NonZeroU32,
}

/// What a policy does with a request no rule allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Deny it (the default).
    Enforce,
    /// Let it through but audit it as `would_deny`: for rolling a policy out.
    Report,
}

impl Mode {
    /// The name used in config and audit.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Mode::Enforce => "enforce",
            Mode::Report => "report",
        }
    }
}

/// A named, compiled policy.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The policy's name in the config.
    pub(crate) name: String,
    /// Enforce or report.
    pub(crate) mode: Mode,
    /// Rules in the order written; of the rules that govern a host (its most specific pattern's), a decision
    /// names the first that allows.
    pub(crate) rules: Vec<Rule>,
    /// Names of the credentials its sandboxes may use.
    pub(crate) credentials: Vec<crate::names::CredentialName>,
    /// How this policy narrows token credentials for its sandboxes.
    pub(crate) credential_scope: std::collections::BTreeMap<String, ScopeOverride>,
    /// Ports of its sandboxes that preview URLs may open.
    pub(crate) expose: Vec<u16>,
    /// The most a sandbox of this policy may ever be granted (its `boundary:`), which contains it: what an
    /// access request may add is held to it.
    pub(crate) boundary: Option<Box<Policy>>,
    /// Whether, and on what terms, its sandboxes may ask for more (its `access:`); `None`: they may not.
    pub(crate) access: Option<AccessTerms>,
    hosts: hosts::HostIndex,
}

impl Policy {
    /// Compile rules into a policy.
    pub fn new(name: String, mode: Mode, rules: Vec<Rule>) -> Result<Policy, globset::Error> {
        let hosts = hosts::HostIndex::new(&rules);
        Ok(Policy {
            name,
            mode,
            rules,
            credentials: Vec::new(),
            credential_scope: std::collections::BTreeMap::new(),
            expose: Vec::new(),
            boundary: None,
            access: None,
            hosts,
        })
    }

    /// This policy with `granted` rules after its own: what a sandbox runs under while access it asked for is
    /// granted. Everything else (name, mode, credentials, boundary) is this policy's.
    pub(crate) fn with_granted(&self, granted: impl IntoIterator<Item = Rule>) -> Policy {
        let mut rules = self.rules.clone();
        rules.extend(granted);
        let hosts = hosts::HostIndex::new(&rules);
        Policy {
            rules,
            hosts,
            ..self.clone()
        }
    }

    /// Whether any rule names this host (at any port): what the DNS responder answers for.
    pub(crate) fn names_host(&self, name: &str) -> bool {
        !self.hosts.governing(name).is_empty()
    }

    /// Count of rules, for summaries.
    pub(crate) fn rule_count(&self) -> usize {
        self.rules.len()
    }
}

/// The policies of `now` in report mode (everything allowed, only recorded) that were not in `before`'s, in
/// name order; all of `now`'s in report mode when there is no `before` (at start).
pub(crate) fn newly_reporting<'a>(
    now: &'a std::collections::BTreeMap<String, std::sync::Arc<Policy>>,
    before: Option<&std::collections::BTreeMap<String, std::sync::Arc<Policy>>>,
) -> Vec<&'a str> {
    let was_reporting = |name: &str| before.and_then(|b| b.get(name)).is_some_and(|p| p.mode == Mode::Report);
    now.values()
        .filter(|p| p.mode == Mode::Report && !was_reporting(&p.name))
        .map(|p| p.name.as_str())
        .collect()
}

/// Builders the policy module's tests share.
#[cfg(test)]
pub(crate) mod testing {
    use super::allowlist::DEFAULT_PORTS;
    use super::{Action, HostPattern, Rule, TlsMode};

    /// A rule for `host` on the default ports, any method and path, in `tls` mode.
    pub(crate) fn rule(host: &str, tls: TlsMode) -> Rule {
        Rule {
            host: HostPattern::parse(host).ok(),
            cidrs: vec![],
            ports: DEFAULT_PORTS.to_vec(),
            methods: None,
            paths: None,
            path_texts: vec![],
            tls,
            action: Action::Allow,
            mcp: None,
            graphql: None,
            model_api: None,
        }
    }
}

/// A policy's narrowing of a token credential: what its sandboxes' tokens may do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ScopeOverride {
    /// OAuth2 scope.
    pub(crate) scope: Option<String>,
    /// OAuth2 audience.
    pub(crate) audience: Option<String>,
    /// OAuth2 resource.
    pub(crate) resource: Option<String>,
    /// GitHub App repositories.
    pub(crate) repositories: Option<Vec<String>>,
    /// GitHub App permissions.
    pub(crate) permissions: Option<std::collections::BTreeMap<String, String>>,
    /// AWS AssumeRole session policy, as JSON.
    pub(crate) session_policy: Option<String>,
}
