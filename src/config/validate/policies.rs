//! Validation of `policies:`: modes, and each rule's host or CIDRs, ports, methods, paths and TLS mode.

use std::collections::BTreeMap;

use ipnet::IpNet;

use super::fields::{Errors, cidr, methods, paths, ports};
use crate::config::raw::{RawPolicy, RawRule};
use crate::policy::allowlist::DEFAULT_PORTS;
use crate::policy::{Action, HostPattern, Mode, Policy, Rule, TlsMode};

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
    })
}

#[cfg(test)]
#[path = "policies_tests.rs"]
mod tests;
