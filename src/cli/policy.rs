//! `cordon policy diff OLD NEW` and `cordon policy contains BOUNDARY CANDIDATE`: what a policy change adds, and
//! the proof that one policy lies inside another (or a request that shows it does not). Both are the ceiling's
//! check ([`crate::policy::ceiling`]), with counterexamples decided by the live decision.
//!
//! A policy is named as `NAME` (a policy of the configuration), `boundary:NAME` (its `boundary:`), or a file
//! (an argument with a `/`, or ending in `.yaml`, `.yml` or `.json`) holding one policy written as under
//! `policies:` (`mode`, `allow`, `credentials`).

use std::process::ExitCode;

use clap::Subcommand;
use serde_json::{Value, json};

use super::args::{ConfigArg, load};
use crate::config::Config;
use crate::policy::Policy;
use crate::policy::ceiling::{Exceeds, exceeds_bound};
use crate::policy::witness::Witness;

#[derive(Subcommand)]
pub(super) enum PolicyCommand {
    /// What NEW allows that OLD does not (and, separately, what it no longer allows).
    ///
    /// Each finding names the JSON path of what goes past, what it adds (a destination, port, method, path, MCP
    /// tool, GraphQL operation, credential, a tunnel where there was interception, report mode, an approval no
    /// longer asked) and a concrete request that shows it, with the credentials it would now carry. Exit 0:
    /// nothing added; 1: something added; 2: a policy could not be read.
    Diff {
        #[command(flatten)]
        config: ConfigArg,
        /// Print the findings as JSON.
        #[arg(long)]
        json: bool,
        /// The policy before: NAME, boundary:NAME, or a file.
        old: String,
        /// The policy after: NAME, boundary:NAME, or a file.
        new: String,
    },
    /// Prove that BOUNDARY allows every request CANDIDATE allows, or print a request that shows it does not.
    ///
    /// A request is judged whole: destination, port, method, path, MCP tool, GraphQL operation, the credentials
    /// it carries, the TLS mode its connection opens in, and whether a person is asked first. Exit 0: contained;
    /// 1: not contained (each way it goes past, with a counterexample); 2: a policy could not be read.
    Contains {
        #[command(flatten)]
        config: ConfigArg,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
        /// The outer policy: NAME, boundary:NAME, or a file.
        boundary: String,
        /// The policy held to it: NAME, boundary:NAME, or a file.
        candidate: String,
    },
    /// Write the narrowest policy that would have allowed what an audit log shows a sandbox doing (a report-mode
    /// run, or refusals), grouped by host.
    ///
    /// Refusals no rule changes (metadata, private addresses, malformed requests, credentials out of place) are
    /// counted, never allowed. Exit 0: a policy written; 1: nothing to suggest; 2: unusable input.
    Suggest(super::suggest::SuggestArgs),
}

/// Run a `policy` command.
pub(super) fn main(command: PolicyCommand) -> ExitCode {
    match command {
        PolicyCommand::Diff { config, json, old, new } => run(&config, json, &old, &new, diff),
        PolicyCommand::Contains {
            config,
            json,
            boundary,
            candidate,
        } => run(&config, json, &boundary, &candidate, contains),
        PolicyCommand::Suggest(args) => super::suggest::main(args),
    }
}

/// A policy named on the command line, and the JSON path its findings are written under.
struct NamedPolicy {
    policy: Policy,
    at: String,
    label: String,
}

type PolicyReport = fn(&Config, &NamedPolicy, &NamedPolicy, bool) -> ExitCode;

fn run(arg: &ConfigArg, json: bool, first: &str, second: &str, report: PolicyReport) -> ExitCode {
    let config = match load(arg) {
        Ok(c) => c,
        Err(code) => return code,
    };
    match (resolve(&config, first), resolve(&config, second)) {
        (Ok(a), Ok(b)) => report(&config, &a, &b, json),
        (a, b) => {
            for e in [a.err(), b.err()].into_iter().flatten().flatten() {
                eprintln!("cordon: {e}");
            }
            ExitCode::from(2)
        }
    }
}

/// The policy `arg` names: a file, `boundary:NAME`, or a policy of `config`.
fn resolve(config: &Config, arg: &str) -> Result<NamedPolicy, Vec<String>> {
    let known = || config.policies.keys().cloned().collect::<Vec<_>>().join(", ");
    let is_file = arg.contains('/') || [".yaml", ".yml", ".json"].iter().any(|e| arg.ends_with(e));
    if is_file {
        let text = std::fs::read_to_string(arg).map_err(|e| vec![format!("cannot read the policy file {arg}: {e}")])?;
        let known: Vec<&str> = config
            .credentials
            .keys()
            .map(crate::names::CredentialName::as_str)
            .collect();
        let policy = crate::config::boundary::document(&known, arg, arg.to_string(), &text)?;
        return Ok(NamedPolicy {
            policy,
            at: String::new(),
            label: arg.to_string(),
        });
    }
    if let Some(name) = arg.strip_prefix("boundary:") {
        let p = config.policies.get(name).ok_or_else(|| {
            vec![format!(
                "{}: there is no policy {name:?}; the policies are: {}",
                config.source,
                known()
            )]
        })?;
        let b = p.boundary.as_deref().ok_or_else(|| {
            vec![format!(
                "{}: policy {name:?} has no boundary (write policies.{name}.boundary)",
                config.source
            )]
        })?;
        return Ok(NamedPolicy {
            policy: b.clone(),
            at: format!("policies.{name}.boundary"),
            label: format!("boundary:{name}"),
        });
    }
    match config.policies.get(arg) {
        Some(p) => Ok(NamedPolicy {
            policy: Policy::clone(p),
            at: format!("policies.{arg}"),
            label: arg.to_string(),
        }),
        None => Err(vec![format!(
            "{}: there is no policy {arg:?}; the policies are: {} (a file needs a '/' or a .yaml, .yml or .json name)",
            config.source,
            known()
        )]),
    }
}

/// Everything `inner` allows that `outer` does not, with counterexamples (credentials bound as `config` says).
fn findings(config: &Config, inner: &NamedPolicy, outer: &NamedPolicy) -> Vec<Exceeds> {
    let bound = |name: &crate::names::CredentialName, t: &crate::target::Target, m: &http::Method, p: &str| {
        config.credentials.get(name).is_some_and(|c| c.binding.matches(t, m, p))
    };
    let mut out = exceeds_bound(&inner.policy, &outer.policy, &inner.at, &bound);
    for e in &mut out {
        if let Some(rest) = e.path.strip_prefix('.') {
            e.path = rest.to_string();
        }
    }
    out
}

/// What a finding adds, by the field it is at.
fn kind(path: &str) -> &'static str {
    let tail = path.rsplit(']').next().unwrap_or(path);
    if path.ends_with(".mode") || path == "mode" {
        "report mode where it enforced"
    } else if path.contains("credentials[") {
        "credential"
    } else if tail.starts_with(".mcp") {
        "MCP tool"
    } else if tail.starts_with(".graphql") {
        "GraphQL operation"
    } else {
        match tail {
            ".host" | ".cidrs" => "destination",
            ".ports" => "port",
            ".methods" => "method",
            ".paths" => "path",
            ".tls" => "TLS mode",
            ".action" => "approval no longer asked",
            _ => "rule",
        }
    }
}

/// The credentials of `p` a request would carry (its list, bound there, intercepted).
fn carried(config: &Config, p: &Policy, w: &Witness) -> Vec<String> {
    let Some((m, path)) = &w.request else {
        return Vec::new();
    };
    if !w.intercepted {
        return Vec::new();
    }
    p.credentials
        .iter()
        .filter(|c| {
            config
                .credentials
                .get(*c)
                .is_some_and(|s| s.binding.matches(&w.target, m, path))
        })
        .map(|c| c.as_str().to_string())
        .collect()
}

fn witness_json(w: &Witness, credentials: &[String]) -> Value {
    json!({
        "method": w.request.as_ref().map_or("CONNECT".to_string(), |(m, _)| m.to_string()),
        "url": w.url(),
        "host": w.target.host.to_string(),
        "port": w.target.port,
        "path": w.request.as_ref().map(|(_, p)| p.clone()),
        "intercepted": w.intercepted,
        "mcp_tool": w.tool,
        "graphql": w.operation.as_ref().map(|(t, f, n)| json!({"type": t.as_str(), "field": f, "name": n})),
        "credential": w.credential.as_ref().map(|c| c.as_str().to_string()),
        "credentials_carried": credentials,
        "allowed": w.allowed_by,
        "refused": w.refused_by,
    })
}

fn finding_json(config: &Config, inner: &NamedPolicy, e: &Exceeds) -> Value {
    let carried = e
        .counterexample
        .as_ref()
        .map(|w| carried(config, &inner.policy, w))
        .unwrap_or_default();
    json!({
        "path": e.path,
        "kind": kind(&e.path),
        "message": e.message,
        "counterexample": e.counterexample.as_ref().map(|w| witness_json(w, &carried)),
    })
}

fn finding_text(config: &Config, inner: &NamedPolicy, e: &Exceeds, outer: &str) -> String {
    let mut s = format!("  {} ({}): {}\n", e.path, kind(&e.path), e.message);
    match &e.counterexample {
        Some(w) => {
            s.push_str(&format!("    for example  {}\n", w.describe()));
            s.push_str(&format!("      {}: {}\n", inner.label, w.allowed_by));
            s.push_str(&format!("      {outer}: {}\n", w.refused_by));
            let c = carried(config, &inner.policy, w);
            if !c.is_empty() {
                s.push_str(&format!("      credentials it would carry there: {}\n", c.join(", ")));
            }
        }
        None => s.push_str(
            "    (no concrete request made from this rule shows it: the check is conservative here, e.g. for path \
             globs it cannot prove inside; narrow the rule or the globs)\n",
        ),
    }
    s
}

fn print_json(v: &Value) -> bool {
    match serde_json::to_string_pretty(v) {
        Ok(t) => {
            outln!("{t}");
            true
        }
        Err(e) => {
            eprintln!("cordon: cannot write JSON: {e}");
            false
        }
    }
}

fn diff(config: &Config, old: &NamedPolicy, new: &NamedPolicy, json: bool) -> ExitCode {
    let added = findings(config, new, old);
    let removed = findings(config, old, new);
    if json {
        let v = json!({
            "old": old.label,
            "new": new.label,
            "adds": !added.is_empty(),
            "added": added.iter().map(|e| finding_json(config, new, e)).collect::<Vec<_>>(),
            "removed": removed.iter().map(|e| finding_json(config, old, e)).collect::<Vec<_>>(),
        });
        if !print_json(&v) {
            return ExitCode::from(2);
        }
    } else {
        let mut s = String::new();
        if added.is_empty() {
            s.push_str(&format!("{} adds nothing to {}\n", new.label, old.label));
        } else {
            s.push_str(&format!("added ({} allows what {} does not):\n", new.label, old.label));
            for e in &added {
                s.push_str(&finding_text(config, new, e, &old.label));
            }
        }
        if !removed.is_empty() {
            s.push_str(&format!(
                "removed ({} allowed what {} does not):\n",
                old.label, new.label
            ));
            for e in &removed {
                s.push_str(&finding_text(config, old, e, &new.label));
            }
        }
        out!("{s}");
    }
    if added.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn contains(config: &Config, boundary: &NamedPolicy, candidate: &NamedPolicy, json: bool) -> ExitCode {
    let past = findings(config, candidate, boundary);
    if json {
        let v = json!({
            "boundary": boundary.label,
            "candidate": candidate.label,
            "contained": past.is_empty(),
            "exceeds": past.iter().map(|e| finding_json(config, candidate, e)).collect::<Vec<_>>(),
        });
        if !print_json(&v) {
            return ExitCode::from(2);
        }
    } else if past.is_empty() {
        outln!(
            "{} contains {}: every request {} allows, {} allows too",
            boundary.label,
            candidate.label,
            candidate.label,
            boundary.label
        );
    } else {
        let mut s = format!("{} does not contain {}:\n", boundary.label, candidate.label);
        for e in &past {
            s.push_str(&finding_text(config, candidate, e, &boundary.label));
        }
        out!("{s}");
    }
    if past.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
