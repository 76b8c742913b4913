//! Counterexamples to containment: a concrete request (method, host, port, path, and an MCP tool, a GraphQL
//! operation or a credential where one matters) that one policy lets through and another does not, found by
//! asking both the live decision ([`Policy::decide`], then the rule's `mcp:` or `graphql:` section) about
//! requests made from the first policy's rules and the second's patterns inside them.
//!
//! The ceiling ([`super::ceiling::exceeds`]) decides whether a policy goes past another; this module only
//! names a request that shows it. Every request it names has been decided by both policies, so it is never a
//! guess; where the ceiling is conservative (path globs it cannot prove inside another's), none may be found.

use http::Method;

use super::allowlist::{Action, HostPattern, Rule};
use super::graphql::{FieldVerdict, OpType};
use super::mcp::ToolVerdict;
use super::{Policy, Question, TlsMode};
use crate::names::CredentialName;
use crate::target::{Host, Target};

/// The label a probe puts under a `*.suffix` pattern, and the name of a tool or field nothing names.
const PROBE: &str = "cordon-probe";

/// A concrete request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Witness {
    /// Where it goes.
    pub(crate) target: Target,
    /// Method and path of the request; `None`: the CONNECT (or TLS connection) alone.
    pub(crate) request: Option<(Method, String)>,
    /// Whether the request is read inside an intercepted TLS connection (`https://`), or sent plain.
    pub(crate) intercepted: bool,
    /// The MCP tool it calls (a `tools/call` POST).
    pub(crate) tool: Option<String>,
    /// The GraphQL operation it sends: type, root field, and its name (`None`: anonymous).
    pub(crate) operation: Option<(OpType, String, Option<String>)>,
    /// The credential it would carry.
    pub(crate) credential: Option<CredentialName>,
    /// What the policy that allows it does, and what the other does (`allowed by rule 0 (intercept)`,
    /// `refused: no rule allows ...`).
    pub(crate) allowed_by: String,
    /// Why the other policy does not allow it as the first does.
    pub(crate) refused_by: String,
}

impl Witness {
    /// The request as a URL `cordon explain` takes (`https://host:port/path`); for a CONNECT alone, its root.
    pub(crate) fn url(&self) -> String {
        let scheme = if self.intercepted || self.request.is_none() {
            "https"
        } else {
            "http"
        };
        let path = self.request.as_ref().map_or("/", |(_, p)| p.as_str());
        format!("{scheme}://{}{path}", self.target)
    }

    /// One line for people: `POST https://api.example.com:443/v1/x (MCP tool delete_repo)`.
    pub(crate) fn describe(&self) -> String {
        let mut s = match &self.request {
            Some((m, _)) => format!("{m} {}", self.url()),
            None => format!("CONNECT {}", self.target),
        };
        if let Some(t) = &self.tool {
            s.push_str(&format!(" (MCP tool {t})"));
        }
        if let Some((ty, f, name)) = &self.operation {
            let name = name.as_deref().map(|n| format!(" {n}")).unwrap_or_default();
            s.push_str(&format!(" (GraphQL {}{name} {{ {f} }})", ty.as_str()));
        }
        if let Some(c) = &self.credential {
            s.push_str(&format!(" (with credential {c})"));
        }
        s
    }
}

/// What a policy does with a probe.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ProbeOutcome {
    /// Refused, and why.
    Refused(String),
    /// Let through: by which rule (`None`: report mode), in which TLS mode, whether a person is asked first.
    Allowed {
        rule: Option<usize>,
        tls: Option<TlsMode>,
        asks: bool,
    },
}

/// A request to probe, before it is decided.
#[derive(Debug, Clone)]
struct Probe {
    target: Target,
    request: Option<(Method, String)>,
    intercepted: bool,
    tool: Option<String>,
    operation: Option<(OpType, String, Option<String>)>,
    credential: Option<CredentialName>,
}

/// Whether credential `name` may be sent with `method path` to `target` (its `bind:`), as the configuration says.
pub(crate) type CredentialBound<'a> = &'a dyn Fn(&CredentialName, &Target, &Method, &str) -> bool;

/// What `policy` decides about `p`, as the live pipeline would: the rule that allows it, then its protocol
/// section, then (for a credential) whether the policy lists it and its binding covers the request.
fn judge(policy: &Policy, p: &Probe, bound: CredentialBound<'_>) -> ProbeOutcome {
    let request = p.request.as_ref().map(|(m, path)| (m, path.as_str()));
    let d = policy.decide(Question {
        target: &p.target,
        request,
        intercepted: p.intercepted,
    });
    if !d.allowed {
        let why = d.deny.map_or_else(|| "refused".into(), |r| r.describe(&p.target));
        return ProbeOutcome::Refused(why);
    }
    if let (Some(c), Some((m, path))) = (&p.credential, request) {
        if !policy.credentials.contains(c) {
            return ProbeOutcome::Refused(format!("it does not let its sandboxes use the credential {c}"));
        }
        let tls = d.rule.and_then(|i| policy.rules.get(i)).map(|r| r.tls);
        if !(p.intercepted && tls != Some(TlsMode::Tunnel) && bound(c, &p.target, m, path)) {
            return ProbeOutcome::Refused(format!("the credential {c} is not sent with this request"));
        }
    }
    let Some(index) = d.rule else {
        // Report mode: let through whatever no rule allows.
        return ProbeOutcome::Allowed {
            rule: None,
            tls: None,
            asks: false,
        };
    };
    let Some(rule) = policy.rules.get(index) else {
        return ProbeOutcome::Refused("no such rule".into());
    };
    let mut asks = request.is_some() && rule.action == Action::Ask;
    if let (Some(tool), Some(mcp)) = (&p.tool, &rule.mcp) {
        match mcp.tool(tool) {
            ToolVerdict::Allow => {}
            ToolVerdict::Ask => asks = true,
            v => return ProbeOutcome::Refused(format!("its rule {index} refuses the MCP tool {tool:?} ({v:?})")),
        }
    }
    if let (Some((ty, field, name)), Some(g)) = (&p.operation, &rule.graphql) {
        match g.field(*ty, field) {
            FieldVerdict::Allow => {}
            FieldVerdict::Ask => asks = true,
            v => {
                return ProbeOutcome::Refused(format!(
                    "its rule {index} refuses the GraphQL {} {field} ({v:?})",
                    ty.as_str()
                ));
            }
        }
        if !g.name(name.as_deref()) {
            return ProbeOutcome::Refused(format!(
                "its rule {index} refuses an operation named {name:?} (not among its names)"
            ));
        }
    }
    ProbeOutcome::Allowed {
        rule: Some(index),
        tls: Some(rule.tls),
        asks,
    }
}

/// What part of `candidate` a counterexample is looked for in.
#[derive(Debug, Clone, Copy)]
pub(crate) enum LookIn {
    /// Requests its rule at this index lets through.
    Rule(usize),
    /// Requests no rule lets through (its report mode).
    Mode,
    /// Requests carrying the credential at this index of its list.
    Credential(usize),
}

/// A request `candidate` lets through (or opens in another TLS mode, or sends without the approval it asks
/// for) that `boundary` does not, among those made from `scope`; `None` when none of them shows it.
pub(crate) fn find(
    candidate: &Policy,
    boundary: &Policy,
    scope: LookIn,
    bound: CredentialBound<'_>,
) -> Option<Witness> {
    let probes: Vec<Probe> = match scope {
        LookIn::Rule(i) => candidate
            .rules
            .get(i)
            .map(|r| probes(r, boundary, None))
            .unwrap_or_default(),
        LookIn::Mode => {
            let mut all: Vec<Probe> = boundary
                .rules
                .iter()
                .chain(&candidate.rules)
                .flat_map(|r| probes(r, boundary, None))
                .collect();
            all.push(connect(Host::Name(format!("{PROBE}.invalid")), 443));
            all
        }
        LookIn::Credential(c) => {
            let name = candidate.credentials.get(c)?;
            candidate
                .rules
                .iter()
                .flat_map(|r| probes(r, boundary, Some(name)))
                .collect()
        }
    };
    probes.into_iter().find_map(|p| shows(candidate, boundary, p, bound))
}

/// The probe as a counterexample, if `candidate` lets it through as `boundary` does not.
fn shows(candidate: &Policy, boundary: &Policy, p: Probe, bound: CredentialBound<'_>) -> Option<Witness> {
    // A request `boundary` would never see (its CONNECT opens a tunnel) is no counterexample of a request: the
    // difference is the TLS mode, which the CONNECT shows.
    if p.intercepted
        && let ProbeOutcome::Allowed {
            tls: Some(TlsMode::Tunnel),
            ..
        } = judge(boundary, &connect(p.target.host.clone(), p.target.port), bound)
    {
        return None;
    }
    let (mine, theirs) = (judge(candidate, &p, bound), judge(boundary, &p, bound));
    let ProbeOutcome::Allowed { rule, tls, asks } = mine else {
        return None;
    };
    let by = |rule: Option<usize>, tls: Option<TlsMode>, asks: bool| match rule {
        None => "let through (report mode)".to_string(),
        Some(i) => format!(
            "allowed by rule {i} ({}{})",
            tls.map_or("", TlsMode::as_str),
            if asks { ", after a person approves" } else { "" }
        ),
    };
    let refused_by = match theirs {
        ProbeOutcome::Refused(why) => format!("refused: {why}"),
        ProbeOutcome::Allowed {
            rule: r2,
            tls: t2,
            asks: a2,
        } => {
            if p.request.is_none() && tls.is_some() && t2.is_some() && tls != t2 {
                format!("{} instead: a tunnel hides what an interception sees", by(r2, t2, a2))
            } else if a2 && !asks {
                format!("{}: the candidate skips the approval", by(r2, t2, a2))
            } else {
                return None;
            }
        }
    };
    Some(Witness {
        target: p.target,
        request: p.request,
        intercepted: p.intercepted,
        tool: p.tool,
        operation: p.operation,
        credential: p.credential,
        allowed_by: by(rule, tls, asks),
        refused_by,
    })
}

fn connect(host: Host, port: u16) -> Probe {
    Probe {
        target: Target { host, port },
        request: None,
        intercepted: false,
        tool: None,
        operation: None,
        credential: None,
    }
}

/// A name a glob of names matches (`delete_*` → `delete_x`), or the text itself.
fn concrete(glob: &str) -> String {
    glob.replace("**", "x/x").replace(['*', '?'], "x")
}

/// Hosts of `rule`'s destination: its name (or one under its `*.suffix`), and each of `boundary`'s patterns or
/// ranges inside it.
fn hosts(rule: &Rule, boundary: &Policy) -> Vec<Host> {
    let named = |p: &HostPattern| match p {
        HostPattern::Exact(n) => Host::Name(n.clone()),
        HostPattern::Subdomains(s) => Host::Name(format!("{PROBE}.{s}")),
    };
    let mut out = Vec::new();
    if let Some(mine) = &rule.host {
        out.push(named(mine));
        for t in boundary.rules.iter().filter_map(|b| b.host.as_ref()) {
            if super::hosts::host_within(t, mine) {
                out.push(named(t));
            }
        }
    }
    for mine in &rule.cidrs {
        let of = |n: &ipnet::IpNet| match n.network() {
            std::net::IpAddr::V4(a) => Host::V4(a),
            std::net::IpAddr::V6(a) => Host::V6(a),
        };
        out.push(of(mine));
        for t in boundary.rules.iter().flat_map(|b| b.cidrs.iter()) {
            if mine.contains(t) {
                out.push(of(t));
            }
        }
    }
    out.dedup();
    out
}

/// The requests to try for `rule`: each host and port at CONNECT, then requests of each method and path it
/// allows (and that `boundary`'s rules name), plain and intercepted, with the MCP tools and GraphQL operations
/// either policy names; each carrying `credential` when one is given.
fn probes(rule: &Rule, boundary: &Policy, credential: Option<&CredentialName>) -> Vec<Probe> {
    let theirs = || boundary.rules.iter();
    let methods: Vec<Method> = match &rule.methods {
        Some(m) => m.clone(),
        None => {
            let mut m: Vec<Method> = [Method::GET, Method::POST, Method::PUT, Method::PATCH, Method::DELETE]
                .into_iter()
                .chain(theirs().flat_map(|b| b.methods.iter().flatten().cloned()))
                .collect();
            m.dedup();
            m
        }
    };
    let mut paths: Vec<String> = rule.path_texts.iter().map(|p| concrete(p)).collect();
    paths.extend(["/".to_string(), format!("/{PROBE}")]);
    paths.extend(theirs().flat_map(|b| b.path_texts.iter().map(|p| concrete(p))));
    if let Some(set) = &rule.paths {
        paths.retain(|p| set.is_match(p));
    }
    paths.dedup();
    let mut tools: Vec<Option<String>> = vec![None];
    let mut ops: Vec<Option<(OpType, String, Option<String>)>> = vec![None];
    let op_name = rule
        .graphql
        .as_ref()
        .and_then(|g| g.name_texts().first().map(|n| concrete(n)));
    for r in std::iter::once(rule).chain(theirs()) {
        if let Some(m) = &r.mcp {
            for t in m.tools.texts.iter().chain(&m.ask.texts).chain(&m.deny.texts) {
                tools.push(Some(concrete(t)));
            }
            tools.push(Some(PROBE.replace('-', "_")));
        }
        if let Some(g) = &r.graphql {
            for e in g.entries() {
                let (ty, field) = e.split_once('.').unwrap_or((e, "cordonProbe"));
                if let Some(ty) = OpType::ALL.into_iter().find(|t| t.as_str() == ty) {
                    ops.push(Some((ty, concrete(field), op_name.clone())));
                }
            }
        }
    }
    let mut out = Vec::new();
    // 443 first: the request a reader expects; a tunnel rule's difference shows at CONNECT, another's in a
    // request (the form `cordon explain` takes).
    let mut ports = rule.ports.clone();
    ports.sort_by_key(|p| (*p != 443, *p));
    let connect_first = rule.tls == TlsMode::Tunnel;
    for host in hosts(rule, boundary) {
        for &port in &ports {
            if credential.is_none() && connect_first {
                out.push(connect(host.clone(), port));
            }
            for intercepted in [true, false] {
                for m in &methods {
                    for path in &paths {
                        for tool in &tools {
                            for op in &ops {
                                // An MCP call or a GraphQL operation is a POST, and one at a time.
                                if (tool.is_some() || op.is_some())
                                    && (*m != Method::POST || tool.is_some() && op.is_some())
                                {
                                    continue;
                                }
                                out.push(Probe {
                                    target: Target {
                                        host: host.clone(),
                                        port,
                                    },
                                    request: Some((m.clone(), path.clone())),
                                    intercepted,
                                    tool: tool.clone(),
                                    operation: op.clone(),
                                    credential: credential.cloned(),
                                });
                            }
                        }
                    }
                }
            }
            if credential.is_none() && !connect_first {
                out.push(connect(host.clone(), port));
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "witness_proptests.rs"]
mod proptests;
