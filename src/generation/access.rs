//! Access a sandbox asked for, under one generation: judging a request (its rules compiled as a policy's are,
//! held to the policy's boundary, what it adds, whether it lets a credential reach anywhere new), and the policy a
//! sandbox runs under while grants are live (its own with the granted rules after them, held to the boundary
//! again, so that a reload that narrows the boundary ends what no longer fits).

use std::sync::Arc;

use serde_json::Value;

use crate::config::Config;
use crate::control::access::Addition;
use crate::identity::Sandbox;
use crate::policy::ceiling::{Exceeds, exceeds_bound};
use crate::policy::witness::kind;
use crate::policy::{AccessTerms, Policy, Rule};

/// How many sandboxes' granted policies a generation keeps compiled.
const GRANTED_CACHE: u64 = 10_000;

/// A request judged: what it would add, and on what terms it may be granted.
#[derive(Debug)]
pub(crate) struct JudgedAccess {
    /// The base policy's name (its boundary holds the request).
    pub(crate) policy: String,
    /// The policy's `access:`.
    pub(crate) terms: AccessTerms,
    /// What it adds to what the sandbox may do now.
    pub(crate) adds: Vec<Addition>,
    /// Whether a request it lets through might carry one of the policy's credentials.
    pub(crate) reaches_credentials: bool,
}

/// Why a request cannot be granted.
#[derive(Debug)]
pub(crate) enum NotGrantable {
    /// The sandbox's policy has no `access:` (named), or the sandbox has no policy.
    NotOffered(String),
    /// The rules are not rules (each error at its path).
    Invalid(Vec<String>),
    /// It goes past the boundary (each way, with a request that shows it).
    PastBoundary(String, Vec<Addition>),
    /// The sandbox may do all of it already.
    NothingNew,
}

/// Compiled granted policies, by sandbox id: the grants they were made of, the policy they were made on, and
/// what came of it.
pub(super) struct GrantedCache(moka::sync::Cache<String, Arc<GrantedPolicy>>);

pub(super) struct GrantedPolicy {
    grants: Vec<String>,
    on: Arc<Policy>,
    policy: Arc<Policy>,
}

impl GrantedCache {
    pub(super) fn new() -> GrantedCache {
        GrantedCache(moka::sync::Cache::new(GRANTED_CACHE))
    }
}

/// `exceeds`'s findings as additions, with paths renumbered to the request's own rules (the first `skip` rules
/// of the policy checked are the sandbox's own).
fn additions(found: Vec<Exceeds>, skip: usize) -> Vec<Addition> {
    found
        .into_iter()
        .map(|e| {
            let path = renumber(e.path.trim_start_matches('.'), skip);
            Addition {
                kind: kind(&path).to_string(),
                message: e.message,
                example: e.counterexample.map(|w| w.describe()),
                path,
            }
        })
        .collect()
}

/// `allow[N]...` as `allow[N-skip]...` (a finding about one of the request's rules); anything else as it is.
fn renumber(path: &str, skip: usize) -> String {
    let Some(rest) = path.strip_prefix("allow[") else {
        return path.to_string();
    };
    let Some((n, tail)) = rest.split_once(']') else {
        return path.to_string();
    };
    match n.parse::<usize>() {
        Ok(n) if n >= skip => format!("allow[{}]{tail}", n - skip),
        _ => path.to_string(),
    }
}

/// Whether a credential of `policy` might be sent where a rule of `rules` lets a request go.
fn reaches_credentials(config: &Config, policy: &Policy, rules: &[Rule]) -> bool {
    policy.credentials.iter().any(|c| {
        config
            .credentials
            .get(c)
            // A credential the configuration no longer has reaches nowhere.
            .is_some_and(|spec| rules.iter().any(|r| spec.binding.may_reach(r)))
    })
}

/// Everything `policy` allows that `outer` does not (credentials bound as `config` says).
fn past(config: &Config, policy: &Policy, outer: &Policy) -> Vec<Exceeds> {
    let bound = |name: &crate::names::CredentialName, t: &crate::target::Target, m: &http::Method, p: &str| {
        config.credentials.get(name).is_some_and(|c| c.binding.matches(t, m, p))
    };
    exceeds_bound(policy, outer, "", &bound)
}

/// Judge a request for the rules `allow` (JSON, a policy's `allow:` entries) of a sandbox of `base` (the
/// configuration's policy, whose `boundary:` and `access:` hold it) that runs under `now` (with its live grants).
pub(super) fn judge(config: &Config, base: &Policy, now: &Policy, allow: &Value) -> Result<JudgedAccess, NotGrantable> {
    let (Some(terms), Some(boundary)) = (base.access, base.boundary.as_deref()) else {
        return Err(NotGrantable::NotOffered(base.name.clone()));
    };
    let rules = crate::config::access::requested_rules(allow).map_err(NotGrantable::Invalid)?;
    let after = now.with_granted(rules.iter().cloned());
    // SECURITY: what a sandbox may be granted is held to its policy's boundary by the ceiling's own check (the
    // same code `cordon policy contains` runs): everything it would run under, its earlier grants included.
    let beyond = past(config, &after, boundary);
    if !beyond.is_empty() {
        return Err(NotGrantable::PastBoundary(
            base.name.clone(),
            additions(beyond, now.rules.len()),
        ));
    }
    // What the policy's own rules already show against themselves (the check is conservative in places) is not
    // something the request adds.
    let already: Vec<(String, String)> = past(config, now, now)
        .into_iter()
        .map(|e| (e.path, e.message))
        .collect();
    let added: Vec<Exceeds> = past(config, &after, now)
        .into_iter()
        .filter(|e| !already.iter().any(|(p, m)| *p == e.path && *m == e.message))
        .collect();
    let adds = additions(added, now.rules.len());
    if adds.is_empty() {
        return Err(NotGrantable::NothingNew);
    }
    Ok(JudgedAccess {
        policy: base.name.clone(),
        terms,
        reaches_credentials: reaches_credentials(config, now, &rules),
        adds,
    })
}

impl GrantedCache {
    /// `policy` (what `sandbox` runs under without grants) with its live `grants`: the granted rules after its own,
    /// when together they still lie inside `boundary` under `config`; `policy` alone otherwise.
    pub(super) fn policy(
        &self,
        config: &Config,
        sandbox: &Sandbox,
        grants: &[(String, Value)],
        policy: Arc<Policy>,
        boundary: Option<&Policy>,
    ) -> Arc<Policy> {
        let ids: Vec<String> = grants.iter().map(|(id, _)| id.clone()).collect();
        if let Some(hit) = self.0.get(sandbox.id.as_str())
            && hit.grants == ids
            && Arc::ptr_eq(&hit.on, &policy)
        {
            return hit.policy.clone();
        }
        let made = granted_policy(config, sandbox, grants, &policy, boundary);
        self.0.insert(
            sandbox.id.as_str().to_string(),
            Arc::new(GrantedPolicy {
                grants: ids,
                on: policy,
                policy: made.clone(),
            }),
        );
        made
    }
}

fn granted_policy(
    config: &Config,
    sandbox: &Sandbox,
    grants: &[(String, Value)],
    policy: &Arc<Policy>,
    boundary: Option<&Policy>,
) -> Arc<Policy> {
    let Some(boundary) = boundary else {
        tracing::warn!(sandbox = %sandbox.id, "the sandbox's grants are not applied: its policy no longer has a boundary");
        return policy.clone();
    };
    let mut rules = Vec::new();
    for (id, allow) in grants {
        match crate::config::access::requested_rules(allow) {
            Ok(r) => rules.extend(r),
            Err(e) => {
                tracing::warn!(sandbox = %sandbox.id, grant = %id, "a grant is not applied: {}", e.join("; "));
            }
        }
    }
    let after = policy.with_granted(rules);
    // SECURITY: held to the boundary under this generation: a reload that narrows the boundary ends the grants
    // that no longer fit, rather than letting them run past it.
    let beyond = past(config, &after, boundary);
    if let Some(first) = beyond.first() {
        tracing::warn!(sandbox = %sandbox.id, "the sandbox's grants are not applied: together they go past its \
             policy's boundary under this configuration ({}: {})", first.path, first.message);
        return policy.clone();
    }
    Arc::new(after)
}
