//! Access a sandbox asked for, under one generation: judging a request (its rules compiled as a policy's are,
//! held to the policy's boundary, what it adds, whether it lets a credential reach anywhere new), and the policy a
//! sandbox runs under while grants are live (its own with the granted rules after them, held to the boundary
//! again, so that a reload that narrows the boundary ends what no longer fits).

use std::sync::Arc;

use serde_json::Value;

use super::Generation;
use crate::control::Control;
use crate::control::access::Addition;
use crate::identity::{Origin, Sandbox};
use crate::policy::ceiling::{Exceeds, exceeds_bound, kind};
use crate::policy::{AccessTerms, Policy, Rule};

/// How many sandboxes' granted policies a generation keeps compiled.
const GRANTED_CACHE: u64 = 10_000;

/// A request judged: what it would add, and on what terms it may be granted.
#[derive(Debug)]
pub(crate) struct Judged {
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

impl Generation {
    /// The configuration's policy that `sandbox` is of (a run-time sandbox's record names it; an own policy
    /// extends it): whose `boundary:` and `access:` hold what the sandbox may be granted.
    pub(crate) fn base_policy(&self, sandbox: &Sandbox, control: Option<&Control>) -> Option<Arc<Policy>> {
        match (&sandbox.origin, control) {
            (Origin::Config, _) => self.named_policy(&sandbox.policy).cloned(),
            (Origin::Api { .. }, Some(c)) => c.with_policy(&sandbox.id, |name, _| self.named_policy(name).cloned())?,
            (Origin::Api { .. }, None) => None,
        }
    }

    /// Whether `sandbox` may ask for access, and on what terms.
    pub(crate) fn access_terms(&self, sandbox: &Sandbox, control: Option<&Control>) -> Option<AccessTerms> {
        self.base_policy(sandbox, control).and_then(|p| p.access)
    }

    /// Whether each credential of `policy` might be sent where a rule of `rules` lets a request go.
    fn reaches_credentials(&self, policy: &Policy, rules: &[Rule]) -> bool {
        policy.credentials.iter().any(|c| {
            self.config
                .credentials
                .get(c)
                // A credential the configuration no longer has reaches nowhere; one with no binding, anywhere.
                .is_some_and(|spec| rules.iter().any(|r| spec.binding.may_reach(r)))
        })
    }

    /// `policy` and `boundary` compared: everything `policy` allows that `boundary` does not.
    fn past(&self, policy: &Policy, outer: &Policy) -> Vec<Exceeds> {
        let bound = |name: &crate::names::CredentialName, t: &crate::target::Target, m: &http::Method, p: &str| {
            self.config
                .credentials
                .get(name)
                .is_some_and(|c| c.binding.matches(t, m, p))
        };
        exceeds_bound(policy, outer, "", &bound)
    }

    /// Judge a request of `sandbox` for the rules `allow` (JSON, a policy's `allow:` entries): what it adds to the
    /// policy the sandbox runs under now (with its live grants), held to its policy's boundary.
    pub(crate) fn judge_access(
        &self,
        sandbox: &Sandbox,
        control: &Control,
        allow: &Value,
    ) -> Result<Judged, NotGrantable> {
        let base = self
            .base_policy(sandbox, Some(control))
            .ok_or_else(|| NotGrantable::NotOffered(sandbox.policy.clone()))?;
        let (Some(terms), Some(boundary)) = (base.access, base.boundary.as_deref()) else {
            return Err(NotGrantable::NotOffered(base.name.clone()));
        };
        let rules = crate::config::access::requested_rules(allow).map_err(NotGrantable::Invalid)?;
        let now = self
            .policy_for(sandbox, Some(control))
            .ok_or_else(|| NotGrantable::NotOffered(base.name.clone()))?;
        let after = now.with_granted(rules.iter().cloned());
        // SECURITY: what a sandbox may be granted is held to its policy's boundary by the ceiling's own check (the
        // same code `cordon policy contains` runs): everything it would run under, its earlier grants included.
        let past = self.past(&after, boundary);
        if !past.is_empty() {
            return Err(NotGrantable::PastBoundary(
                base.name.clone(),
                additions(past, now.rules.len()),
            ));
        }
        // What the policy's own rules already show against themselves (the check is conservative in places) is
        // not something the request adds.
        let already: Vec<(String, String)> = self.past(&now, &now).into_iter().map(|e| (e.path, e.message)).collect();
        let added: Vec<Exceeds> = self
            .past(&after, &now)
            .into_iter()
            .filter(|e| !already.iter().any(|(p, m)| *p == e.path && *m == e.message))
            .collect();
        let adds = additions(added, now.rules.len());
        if adds.is_empty() {
            return Err(NotGrantable::NothingNew);
        }
        Ok(Judged {
            policy: base.name.clone(),
            terms,
            reaches_credentials: self.reaches_credentials(&now, &rules),
            adds,
        })
    }

    /// `policy` (what `sandbox` runs under without grants) with its live grants: the granted rules after its own,
    /// when they still lie inside its boundary under this generation; `policy` alone otherwise.
    pub(super) fn with_grants(&self, sandbox: &Sandbox, control: &Control, policy: Arc<Policy>) -> Arc<Policy> {
        let grants = control.access.granted(sandbox, crate::control::now());
        if grants.is_empty() {
            return policy;
        }
        let ids: Vec<String> = grants.iter().map(|(id, _)| id.clone()).collect();
        if let Some(hit) = self.granted.0.get(sandbox.id.as_str())
            && hit.grants == ids
            && Arc::ptr_eq(&hit.on, &policy)
        {
            return hit.policy.clone();
        }
        let made = self.granted_policy(sandbox, control, &policy, &grants);
        self.granted.0.insert(
            sandbox.id.as_str().to_string(),
            Arc::new(GrantedPolicy {
                grants: ids,
                on: policy,
                policy: made.clone(),
            }),
        );
        made
    }

    fn granted_policy(
        &self,
        sandbox: &Sandbox,
        control: &Control,
        policy: &Arc<Policy>,
        grants: &[(String, Value)],
    ) -> Arc<Policy> {
        let Some(boundary) = self
            .base_policy(sandbox, Some(control))
            .and_then(|b| b.boundary.as_deref().cloned())
        else {
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
        // SECURITY: held to the boundary under this generation: a reload that narrows the boundary ends the
        // grants that no longer fit, rather than letting them run past it.
        let past = self.past(&after, &boundary);
        if let Some(first) = past.first() {
            tracing::warn!(sandbox = %sandbox.id, "the sandbox's grants are not applied: together they go past its \
                 policy's boundary under this configuration ({}: {})", first.path, first.message);
            return policy.clone();
        }
        Arc::new(after)
    }
}
