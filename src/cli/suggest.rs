//! `cordon policy suggest`: the narrowest policy that would have allowed what an audit log shows a sandbox
//! doing, learnt from a report-mode run (everything let through, what enforcing would refuse recorded as
//! `would_deny`) or from an enforcing run's refusals.
//!
//! What counts: the records of the sandbox's traffic (`http`, `connect`, `https`, `transparent`) that were
//! allowed, would have been denied, or were denied by the policy alone (`no_rule`, `port_not_allowed`,
//! `method_not_allowed`, `path_not_allowed`). A refusal for any other reason (a metadata or private address,
//! cordon's own listener, a malformed request, a credential out of place, a limit) is never suggested: no
//! policy rule changes it, and the output counts them instead. DNS records name hosts only: a host seen only
//! in DNS queries is listed, not allowed.
//!
//! The rules, grouped by host: for each host, the methods seen with the same ports and paths share one rule;
//! paths are the exact paths seen (glob characters escaped), unless the operator asks to keep only their first
//! N segments (`--paths N`, each then `/**` below) or to drop them (`--paths any`). A host seen only through a
//! CONNECT or a redirected TLS connection (nothing inside it was recorded: refused before, or `tls: tunnel`)
//! gets a rule of its ports alone, and the output says so: run again in report mode to learn its requests.
//! Hosts that are IP addresses become `cidrs` of that one address. Credentials, MCP tools and GraphQL
//! operations are not suggested: a policy that hands a credential out is a person's decision.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use serde::Serialize;
use serde_json::Value;

use crate::reason::Reason;

/// Exit status: a policy was written.
const SUGGESTED: u8 = 0;
/// Exit status: the records hold nothing of the sandbox to suggest a rule for.
const NOTHING: u8 = 1;
/// Exit status: the files cannot be read, or the arguments are wrong.
const UNUSABLE: u8 = 2;

/// The reasons a policy rule decides: a refusal for one of these is what a rule would have allowed.
const POLICY_REASONS: [Reason; 4] = [
    Reason::NoRule,
    Reason::PortNotAllowed,
    Reason::MethodNotAllowed,
    Reason::PathNotAllowed,
];

/// The kinds of record that are a sandbox's traffic.
const TRAFFIC: &[&str] = &["http", "connect", "https", "transparent"];

/// `cordon policy suggest`'s arguments.
#[derive(clap::Args)]
pub(crate) struct SuggestArgs {
    /// Audit files to learn from (rotated ones and `.gz` too, in any order).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The sandbox whose records to learn from (needed when the files hold several).
    #[arg(long)]
    sandbox: Option<String>,
    /// Paths: `exact` (the paths seen, the default), `any` (no path limit), or a number N: each path's first N
    /// segments, then `/**`.
    #[arg(long, default_value = "exact", value_parser = parse_paths)]
    paths: Paths,
    /// The name of the policy written.
    #[arg(long, default_value = "suggested")]
    name: String,
    /// Print JSON (the policy, and what was left out) instead of YAML.
    #[arg(long)]
    json: bool,
}

/// How paths are generalised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Paths {
    /// The paths seen, each exactly.
    Exact,
    /// No path limit.
    Any,
    /// The first N segments of each, then `/**`.
    Prefix(usize),
}

fn parse_paths(text: &str) -> Result<Paths, String> {
    match text {
        "exact" => Ok(Paths::Exact),
        "any" => Ok(Paths::Any),
        n => n
            .parse::<usize>()
            .map(Paths::Prefix)
            .map_err(|_| format!("{text:?} is not `exact`, `any` or a number of path segments")),
    }
}

/// One record of traffic, as far as a suggestion reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SeenRecord {
    pub(crate) sandbox: String,
    pub(crate) kind: String,
    pub(crate) decision: String,
    pub(crate) reason: Option<String>,
    pub(crate) host: String,
    pub(crate) port: Option<u16>,
    pub(crate) method: Option<String>,
    pub(crate) path: Option<String>,
}

impl SeenRecord {
    /// The record on `line`, if it is one of a sandbox's (a checkpoint, or a record no sandbox was identified
    /// for, is `None`); `Err` when the line is not a JSON object.
    pub(crate) fn read(line: &str) -> Result<Option<SeenRecord>, String> {
        let v: Value = serde_json::from_str(line).map_err(|e| format!("not a JSON record: {e}"))?;
        let Some(o) = v.as_object() else {
            return Err("not a JSON object".into());
        };
        let text = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_owned);
        let (Some(sandbox), Some(kind), Some(decision)) = (text("sandbox"), text("kind"), text("decision")) else {
            return Ok(None);
        };
        Ok(Some(SeenRecord {
            sandbox,
            kind,
            decision,
            reason: text("reason"),
            host: text("host").unwrap_or_default(),
            port: o
                .get("port")
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok()),
            method: text("method"),
            path: text("path"),
        }))
    }
}

/// One suggested rule, in the configuration's own form.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct SuggestedRule {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) host: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cidrs: Option<Vec<String>>,
    pub(crate) ports: Vec<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) methods: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) paths: Option<Vec<String>>,
}

/// What a suggestion found.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Suggestion {
    /// The rules, by host.
    pub(crate) allow: Vec<SuggestedRule>,
    /// Records of the sandbox's traffic learnt from.
    pub(crate) learnt: usize,
    /// Refusals no rule changes, by reason: never suggested.
    pub(crate) left_out: BTreeMap<String, usize>,
    /// `host:port` seen only as a tunnel (nothing inside recorded): their rules name ports alone.
    pub(crate) tunnels_only: Vec<String>,
    /// Hosts seen only in DNS queries: not allowed.
    pub(crate) dns_only: Vec<String>,
}

/// Rules sharing ports and path globs, by them: the methods of each.
type SharedBy = BTreeMap<(Vec<u16>, Option<Vec<String>>), Vec<String>>;

/// What one host was seen doing.
#[derive(Default)]
struct HostSeen {
    /// Per method: the ports and paths it was sent to.
    methods: BTreeMap<String, (BTreeSet<u16>, BTreeSet<String>)>,
    /// Ports of tunnels to it (CONNECT, redirected TLS).
    tunnels: BTreeSet<u16>,
}

/// The narrowest rules allowing what `seen` shows of `sandbox`, paths generalised as `paths` says.
pub(crate) fn suggest(seen: &[SeenRecord], sandbox: &str, paths: Paths) -> Suggestion {
    let mut out = Suggestion::default();
    let mut hosts: BTreeMap<String, HostSeen> = BTreeMap::new();
    let mut named = BTreeSet::new();
    for s in seen.iter().filter(|s| s.sandbox == sandbox) {
        if s.kind == "dns" {
            if !s.host.is_empty() {
                named.insert(s.host.clone());
            }
            continue;
        }
        if !TRAFFIC.contains(&s.kind.as_str()) || s.host.is_empty() {
            continue;
        }
        let learnable = match s.decision.as_str() {
            "allow" | "would_deny" => true,
            _ => s
                .reason
                .as_deref()
                .is_some_and(|r| POLICY_REASONS.iter().any(|p| p.code() == r)),
        };
        if !learnable {
            let reason = s.reason.clone().unwrap_or_else(|| "unknown".into());
            *out.left_out.entry(reason).or_default() += 1;
            continue;
        }
        let Some(port) = s.port else { continue };
        out.learnt += 1;
        let host = hosts.entry(s.host.clone()).or_default();
        match (s.method.as_deref(), s.path.as_deref()) {
            (Some(method), Some(path)) if method != "CONNECT" => {
                let (ports, seen_paths) = host.methods.entry(method.to_owned()).or_default();
                ports.insert(port);
                seen_paths.insert(path.to_owned());
            }
            _ => {
                host.tunnels.insert(port);
            }
        }
    }
    for (name, host) in &hosts {
        out.allow.extend(rules_of(name, host, paths));
        let covered: BTreeSet<u16> = host.methods.values().flat_map(|(p, _)| p.iter().copied()).collect();
        out.tunnels_only.extend(
            host.tunnels
                .iter()
                .filter(|p| !covered.contains(p))
                .map(|p| format!("{name}:{p}")),
        );
    }
    out.dns_only = named.into_iter().filter(|n| !hosts.contains_key(n)).collect();
    out
}

/// The rules of one host: methods with the same ports and paths share a rule; tunnel ports no request
/// covers get one of their own, of ports alone.
fn rules_of(name: &str, host: &HostSeen, paths: Paths) -> Vec<SuggestedRule> {
    let place = |ports: Vec<u16>| {
        let ip = name.trim_matches(['[', ']']).parse::<std::net::IpAddr>().ok();
        SuggestedRule {
            host: ip.is_none().then(|| name.to_owned()),
            cidrs: ip.map(|ip| vec![ipnet::IpNet::from(ip).to_string()]),
            ports,
            methods: None,
            paths: None,
        }
    };
    let mut shared = SharedBy::new();
    for (method, (ports, seen)) in &host.methods {
        let globs = generalise(seen, paths);
        shared
            .entry((ports.iter().copied().collect(), globs))
            .or_default()
            .push(method.clone());
    }
    let mut rules: Vec<SuggestedRule> = shared
        .into_iter()
        .map(|((ports, globs), methods)| SuggestedRule {
            methods: Some(methods),
            paths: globs,
            ..place(ports)
        })
        .collect();
    let covered: BTreeSet<u16> = host.methods.values().flat_map(|(p, _)| p.iter().copied()).collect();
    let bare: Vec<u16> = host.tunnels.iter().copied().filter(|p| !covered.contains(p)).collect();
    if !bare.is_empty() {
        rules.push(place(bare));
    }
    rules
}

/// The path globs for the paths seen.
fn generalise(seen: &BTreeSet<String>, paths: Paths) -> Option<Vec<String>> {
    let globs: BTreeSet<String> = match paths {
        Paths::Any => return None,
        Paths::Exact => seen.iter().map(|p| globset::escape(p)).collect(),
        Paths::Prefix(n) => seen
            .iter()
            .map(|p| {
                let segments: Vec<&str> = p.split('/').skip(1).collect();
                if segments.len() <= n {
                    globset::escape(p)
                } else {
                    let kept: Vec<String> = segments[..n].iter().map(|s| globset::escape(s)).collect();
                    format!("/{}/**", kept.join("/")).replacen("//**", "/**", 1)
                }
            })
            .collect(),
    };
    Some(globs.into_iter().collect())
}

/// Run `cordon policy suggest`.
pub(crate) fn main(args: SuggestArgs) -> ExitCode {
    match run(&args) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("cordon policy suggest: {e}");
            ExitCode::from(UNUSABLE)
        }
    }
}

fn run(args: &SuggestArgs) -> Result<u8, String> {
    let mut seen = Vec::new();
    for file in &args.files {
        let text = read(file).map_err(|e| format!("{}: {e}", file.display()))?;
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let record = SeenRecord::read(line).map_err(|e| format!("{}:{}: {e}", file.display(), i + 1))?;
            seen.extend(record);
        }
    }
    let sandboxes: BTreeSet<&str> = seen
        .iter()
        .filter(|s| TRAFFIC.contains(&s.kind.as_str()) || s.kind == "dns")
        .map(|s| s.sandbox.as_str())
        .collect();
    let sandbox = match (&args.sandbox, sandboxes.len()) {
        (Some(id), _) => id.clone(),
        (None, 1) => sandboxes.iter().next().map(|s| (*s).to_owned()).unwrap_or_default(),
        (None, 0) => return Err("the files hold no record of a sandbox's traffic".into()),
        (None, _) => {
            return Err(format!(
                "the files hold records of {} sandboxes ({}): name one with --sandbox",
                sandboxes.len(),
                sandboxes.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
    };
    let suggestion = suggest(&seen, &sandbox, args.paths);
    if args.json {
        let doc = serde_json::json!({
            "sandbox": sandbox,
            "policies": { &args.name: { "allow": suggestion.allow } },
            "learnt": suggestion.learnt,
            "left_out": suggestion.left_out,
            "tunnels_only": suggestion.tunnels_only,
            "dns_only": suggestion.dns_only,
        });
        outln!("{}", serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?);
    } else {
        outln!("{}", yaml(&args.name, &sandbox, &suggestion)?);
    }
    Ok(if suggestion.allow.is_empty() {
        NOTHING
    } else {
        SUGGESTED
    })
}

/// The suggestion as a `policies:` section, with what it left out in comments above it.
fn yaml(name: &str, sandbox: &str, s: &Suggestion) -> Result<String, String> {
    let mut out = format!(
        "# Suggested by `cordon policy suggest` from {} record(s) of sandbox {sandbox}: the narrowest policy that\n\
         # allows what they show. Review it before use: `cordon check` it, and `cordon policy diff` it against the\n\
         # policy it replaces.\n",
        s.learnt
    );
    if !s.left_out.is_empty() {
        let list: Vec<String> = s.left_out.iter().map(|(r, n)| format!("{r} ({n})")).collect();
        out.push_str(&format!(
            "# Not suggested, refused for reasons no rule changes: {}\n",
            list.join(", ")
        ));
    }
    if !s.tunnels_only.is_empty() {
        out.push_str(&format!(
            "# SeenRecord only as tunnels, nothing inside recorded (their rules name ports alone; run again with the \
             policy in `mode: report` to learn their requests): {}\n",
            s.tunnels_only.join(", ")
        ));
    }
    if !s.dns_only.is_empty() {
        out.push_str(&format!(
            "# SeenRecord only in DNS queries, not allowed: {}\n",
            s.dns_only.join(", ")
        ));
    }
    let mut policies = BTreeMap::new();
    policies.insert(name, BTreeMap::from([("allow", &s.allow)]));
    let body = serde_yaml_ng::to_string(&BTreeMap::from([("policies", policies)])).map_err(|e| e.to_string())?;
    out.push_str(&body);
    Ok(out)
}

/// A file's text, decompressed when it is gzip.
fn read(path: &std::path::Path) -> std::io::Result<String> {
    let raw = std::fs::read(path)?;
    let bytes = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut text = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..]).read_to_end(&mut text)?;
        text
    } else {
        raw
    };
    String::from_utf8(bytes).map_err(|_| std::io::Error::other("not UTF-8 text"))
}

#[cfg(test)]
#[path = "suggest_tests.rs"]
mod tests;
