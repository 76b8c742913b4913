//! `policies:`: each policy's mode and rules (a host or CIDRs, ports, methods, paths, the TLS mode, the action,
//! and the `mcp:`, `graphql:` and `model_api:` sections), as written and validated. What else a policy holds is validated
//! with what it bounds: `credentials`/`credential_scope` (`credentials/`), `on_violation` and
//! `credential_budget` (`violations.rs`), `expose` (`previews.rs`), `jail` (`jail.rs`).

use std::collections::BTreeMap;

use ipnet::IpNet;
use schemars::JsonSchema;
use serde::Deserialize;

use super::credentials::RawScope;
use super::errors::Errors;
use super::fields::{cidr, methods, paths, ports};
use super::jail::RawJailLimits;
use super::scalars::{Flag, Whole};
use super::shapes;
use super::violations::{RawBudget, RawOnViolation};
use crate::policy::allowlist::DEFAULT_PORTS;
use crate::policy::{Action, HostPattern, Mode, Policy, Rule, TlsMode};

/// One entry of `policies:`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a policy: a mapping with allow, credentials...")]
pub(super) struct RawPolicy {
    /// `enforce` (default) or `report`.
    #[schemars(with = "Option<shapes::PolicyMode>")]
    pub(crate) mode: Option<String>,
    /// Ordered allow rules.
    #[serde(default)]
    pub(crate) allow: Vec<RawRule>,
    /// Credentials sandboxes of this policy may use.
    #[serde(default)]
    pub(crate) credentials: Vec<String>,
    /// Per-credential narrowing for this policy's sandboxes (OAuth2 scope/audience/resource, GitHub App
    /// repositories/permissions).
    #[serde(default)]
    pub(crate) credential_scope: BTreeMap<String, RawScope>,
    /// What happens to a sandbox that keeps being refused for probing.
    pub(crate) on_violation: Option<RawOnViolation>,
    /// Credential budgets for this policy's sandboxes, replacing the credentials' own.
    #[serde(default)]
    pub(crate) credential_budget: BTreeMap<String, RawBudget>,
    /// Ports of its sandboxes that preview URLs may open.
    #[schemars(with = "Option<Vec<shapes::Port>>")]
    pub(crate) expose: Option<Vec<Whole>>,
    /// What a jail for a sandbox of this policy may spend (over `jail:`).
    pub(crate) jail: Option<RawJailLimits>,
    /// The most a sandbox of this policy may ever be granted: a policy (mode, allow, credentials) that must
    /// contain this one.
    pub(crate) boundary: Option<RawBoundary>,
    /// Whether its sandboxes may ask, from inside, for access up to the boundary, and on what terms.
    pub(crate) access: Option<RawAccess>,
    /// Tokens and cost its sandboxes' model API calls may spend per window, per sandbox and per user.
    pub(crate) model_budget: Option<super::model_api::RawModelBudget>,
}

/// A policy's boundary, or a policy document in a file: a mode, ordered allow rules, the credentials.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a policy: a mapping with mode, allow, credentials")]
pub(super) struct RawBoundary {
    /// `enforce` (default) or `report`.
    #[schemars(with = "Option<shapes::PolicyMode>")]
    pub(crate) mode: Option<String>,
    /// Ordered allow rules, written as under `policies:`.
    #[serde(default)]
    pub(crate) allow: Vec<RawRule>,
    /// Credentials its sandboxes may use (names under `credentials:`).
    #[serde(default)]
    pub(crate) credentials: Vec<String>,
}

/// `policies.NAME.access:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawAccess {
    /// Grant at once what lies inside the boundary and lets no credential of the policy reach anywhere new
    /// (default false: a person decides every request).
    #[schemars(with = "Option<bool>")]
    pub(crate) auto_grant: Option<Flag>,
    /// The longest a grant may last (default 1h, at most 7d).
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) max_lifetime: Option<String>,
    /// How many requests one sandbox may file per hour (default 10).
    pub(crate) per_hour: Option<Whole>,
}

/// One allow rule.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a rule: a mapping with host (or cidrs), and ports, methods, paths..."
)]
pub(super) struct RawRule {
    /// Exact host or `*.suffix`.
    pub(crate) host: Option<String>,
    /// CIDRs for IP-literal destinations.
    #[schemars(with = "Option<Vec<shapes::Cidr>>")]
    pub(crate) cidrs: Option<Vec<String>>,
    /// Allowed ports.
    #[schemars(with = "Option<Vec<shapes::Port>>")]
    pub(crate) ports: Option<Vec<Whole>>,
    /// Allowed methods.
    pub(crate) methods: Option<Vec<String>>,
    /// Allowed path globs.
    pub(crate) paths: Option<Vec<String>>,
    /// `intercept` (default) or `tunnel`.
    #[schemars(with = "Option<shapes::TlsMode>")]
    pub(crate) tls: Option<String>,
    /// `allow` (default) or `ask` (hold for a human's approval).
    #[schemars(with = "Option<shapes::RuleAction>")]
    pub(crate) action: Option<String>,
    /// For an MCP endpoint: the tools its sandboxes may call, ask for, never call; further methods.
    pub(crate) mcp: Option<RawMcp>,
    /// For a GraphQL endpoint: the operations its sandboxes may send, ask for, never send; the names they may use.
    pub(crate) graphql: Option<RawGraphql>,
    /// For a model API: its dialect, and the models its sandboxes may name (their usage is metered).
    pub(crate) model_api: Option<super::model_api::RawModelApi>,
}

/// A rule's `mcp:` section.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "an mcp section: a mapping with tools, ask, deny and methods (lists of names or globs)"
)]
pub(super) struct RawMcp {
    /// Tools called at once.
    #[serde(default)]
    pub(crate) tools: Vec<String>,
    /// Tools held for a person.
    #[serde(default)]
    pub(crate) ask: Vec<String>,
    /// Tools refused.
    #[serde(default)]
    pub(crate) deny: Vec<String>,
    /// JSON-RPC methods beyond the lifecycle and tools/call.
    #[serde(default)]
    pub(crate) methods: Vec<String>,
}

/// A rule's `graphql:` section.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a graphql section: a mapping with operations, ask, deny (operation types or type.field) and names"
)]
pub(super) struct RawGraphql {
    /// Operation types or type.field entries sent at once.
    #[serde(default)]
    pub(crate) operations: Vec<String>,
    /// Held for a person.
    #[serde(default)]
    pub(crate) ask: Vec<String>,
    /// Refused.
    #[serde(default)]
    pub(crate) deny: Vec<String>,
    /// When given, the only operation names that may be sent.
    #[serde(default)]
    pub(crate) names: Vec<String>,
}

/// `policies:`: each named policy's mode and rules.
pub(super) fn policies(errs: &mut Errors, raw: BTreeMap<String, RawPolicy>) -> BTreeMap<String, Policy> {
    let mut out = BTreeMap::new();
    for (name, p) in raw {
        let base = format!("policies.{name}");
        if name.is_empty() {
            errs.at("policies", "a policy has an empty name");
        }
        if let Some(policy) = policy(errs, &base, name.clone(), p.mode.as_deref(), p.allow) {
            out.insert(name, policy);
        }
    }
    out
}

/// One policy's mode and rules, validated at `base` (`policies.web` in the file, `policy` in the admin API): the
/// same checks and messages wherever a policy is written.
pub(super) fn policy(
    errs: &mut Errors,
    base: &str,
    name: String,
    mode: Option<&str>,
    allow: Vec<RawRule>,
) -> Option<Policy> {
    let mode = match mode {
        None | Some("enforce") => Mode::Enforce,
        Some("report") => Mode::Report,
        Some(other) => {
            errs.at(
                format!("{base}.mode"),
                format!("{other:?} is not a mode; write \"enforce\" or \"report\""),
            );
            Mode::Enforce
        }
    };
    let rules: Vec<Rule> = allow
        .into_iter()
        .enumerate()
        .filter_map(|(i, r)| rule(errs, &format!("{base}.allow[{i}]"), r))
        .collect();
    match Policy::new(name, mode, rules) {
        Ok(policy) => {
            for (i, message) in policy.overlaps() {
                errs.warn(format!("{base}.allow[{i}]"), message);
            }
            Some(policy)
        }
        Err(e) => {
            errs.at(base, format!("the host patterns do not compile: {e}"));
            None
        }
    }
}

fn rule(errs: &mut Errors, base: &str, raw: RawRule) -> Option<Rule> {
    let before = errs.list.len();
    let host = match (&raw.host, &raw.cidrs) {
        (Some(_), Some(_)) => {
            errs.at(base, "has both `host` and `cidrs`; write two rules");
            None
        }
        (None, None) => {
            errs.at(
                base,
                "names no destination; add `host: api.example.com` or `cidrs: [\"10.1.2.0/24\"]`",
            );
            None
        }
        (Some(h), None) => HostPattern::parse(h)
            .map_err(|e| errs.at(format!("{base}.host"), e))
            .ok(),
        (None, Some(_)) => None,
    };
    let cidrs: Vec<IpNet> = raw
        .cidrs
        .unwrap_or_default()
        .iter()
        .enumerate()
        .filter_map(|(i, c)| cidr(errs, &format!("{base}.cidrs[{i}]"), c))
        .collect();
    let ports = ports(errs, base, raw.ports, &DEFAULT_PORTS);
    let tls = match raw.tls.as_deref() {
        None | Some("intercept") => TlsMode::Intercept,
        Some("tunnel") => {
            if raw.methods.is_some() || raw.paths.is_some() {
                errs.at(
                    format!("{base}.tls"),
                    "a `tunnel` rule cannot also limit methods or paths: cordon does not see inside a tunnel; remove `methods`/`paths` or use `tls: intercept`",
                );
            }
            TlsMode::Tunnel
        }
        Some(other) => {
            errs.at(
                format!("{base}.tls"),
                format!("{other:?} is not a TLS mode; write \"intercept\" (the default) or \"tunnel\""),
            );
            TlsMode::Intercept
        }
    };
    let action = match raw.action.as_deref() {
        None | Some("allow") => Action::Allow,
        Some("ask") if tls == TlsMode::Tunnel => {
            errs.at(
                format!("{base}.action"),
                "`ask` needs to see each request, which a `tls: tunnel` rule does not; use `tls: intercept`",
            );
            Action::Ask
        }
        Some("ask") => Action::Ask,
        Some(other) => {
            errs.at(
                format!("{base}.action"),
                format!("{other:?} is not an action; write \"allow\" (the default) or \"ask\" (hold for approval)"),
            );
            Action::Allow
        }
    };
    let mcp = raw.mcp.and_then(|m| {
        if tls == TlsMode::Tunnel {
            errs.at(
                format!("{base}.mcp"),
                "`mcp` needs to read each message, which a `tls: tunnel` rule does not; use `tls: intercept`",
            );
            return None;
        }
        crate::policy::mcp::McpRules::new(m.tools, m.ask, m.deny, m.methods)
            .map_err(|(list, i, e)| errs.at(format!("{base}.mcp.{list}[{i}]"), e))
            .ok()
            .map(std::sync::Arc::new)
    });
    let graphql = raw.graphql.and_then(|g| {
        if tls == TlsMode::Tunnel {
            errs.at(
                format!("{base}.graphql"),
                "`graphql` needs to read each request, which a `tls: tunnel` rule does not; use `tls: intercept`",
            );
            return None;
        }
        if mcp.is_some() {
            errs.at(
                format!("{base}.graphql"),
                "a rule judges MCP or GraphQL, not both; write a rule for each endpoint (their paths differ)",
            );
            return None;
        }
        crate::policy::graphql::GraphqlRules::new(g.operations, g.ask, g.deny, g.names)
            .map_err(|(list, i, e)| errs.at(format!("{base}.graphql.{list}[{i}]"), e))
            .ok()
            .map(std::sync::Arc::new)
    });
    let model_api = raw.model_api.and_then(|m| {
        if mcp.is_some() || graphql.is_some() {
            errs.at(
                format!("{base}.model_api"),
                "a rule judges one protocol (MCP, GraphQL or a model API); write a rule for each endpoint",
            );
            return None;
        }
        super::model_api::rule_section(errs, &format!("{base}.model_api"), m, tls == TlsMode::Tunnel)
            .map(std::sync::Arc::new)
    });
    let methods = methods(errs, base, raw.methods);
    let path_texts = raw.paths.clone().unwrap_or_default();
    let paths = paths(errs, base, raw.paths.as_deref());
    (errs.list.len() == before).then_some(Rule {
        host,
        cidrs,
        ports,
        methods,
        paths,
        path_texts,
        tls,
        action,
        mcp,
        graphql,
        model_api,
    })
}

#[cfg(test)]
#[path = "policies_tests.rs"]
mod tests;
