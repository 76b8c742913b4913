//! Standing grants: what an `always` or `exact` allow lets through from then on, and for how long.

use super::ids::fresh_id;
use super::types::{Approval, Grant, HeldRequest, HumanDecision, Reach};

/// Whether `grant` covers `ask`: the same sandbox incarnation (a later sandbox given the same id is another),
/// the same rule as it was when granted, the same method, host (ASCII case aside), port and path, the same MCP
/// tools (for an MCP endpoint) or GraphQL operations (for a GraphQL endpoint); for an `exact` grant also the same query and body.
fn covers(grant: &Grant, ask: &HeldRequest) -> bool {
    // SECURITY: keyed by incarnation and rule: a grant dies with the sandbox it was given to and with the rule it
    // was given under, and never passes a request that differs where its reach says it must not.
    grant.who.incarnation() == ask.who.incarnation()
        && grant.policy == ask.policy
        && grant.rule == ask.rule
        && grant.rule_fingerprint == ask.rule_fingerprint
        && grant.method == ask.method
        && grant.host.eq_ignore_ascii_case(&ask.host)
        && grant.port == ask.port
        && grant.path == ask.path
        // An MCP grant covers the tools it was given for, and no other call through the same endpoint.
        && grant.tools == ask.tools
        // A GraphQL grant likewise covers the operations it was given for.
        && grant.operations == ask.operations
        && match grant.reach {
            Reach::Exact => grant.query == ask.query && grant.body_sha256.as_deref() == Some(ask.body.sha256.as_str()),
            Reach::Always | Reach::Once => true,
        }
}

/// The standing grants, in the order granted.
#[derive(Default)]
pub(super) struct Grants {
    list: Vec<Grant>,
    made: u64,
}

impl Grants {
    /// The grant that lets `ask` through, if any.
    pub(super) fn covering(&self, ask: &HeldRequest) -> Option<&Grant> {
        self.list.iter().find(|g| covers(g, ask))
    }

    /// Every grant, oldest first.
    pub(super) fn all(&self) -> Vec<Grant> {
        self.list.clone()
    }

    /// Remove one; false if unknown.
    pub(super) fn remove(&mut self, id: &str) -> bool {
        let before = self.list.len();
        self.list.retain(|g| g.id != id);
        self.list.len() != before
    }

    /// Add `grant`, or replace the one with its id (a grant another replica made).
    pub(super) fn put(&mut self, grant: Grant) {
        match self.list.iter_mut().find(|g| g.id == grant.id) {
            Some(g) => *g = grant,
            None => self.list.push(grant),
        }
    }

    /// The one with this id.
    pub(super) fn get(&self, id: &str) -> Option<&Grant> {
        self.list.iter().find(|g| g.id == id)
    }

    /// Replace them all (with what the shared store holds).
    pub(super) fn replace(&mut self, all: Vec<Grant>) {
        self.list = all;
    }

    /// Keep only the grants `keep` says still hold.
    pub(super) fn retain(&mut self, keep: impl FnMut(&Grant) -> bool) {
        self.list.retain(keep);
    }

    /// Record a standing grant of `reach` for the request of `pending` (or find one of the same reach that
    /// covers it already); returns its id.
    pub(super) fn add(&mut self, pending: &Approval, decision: &HumanDecision, reach: Reach) -> String {
        let ask = &pending.ask;
        if let Some(existing) = self.list.iter().find(|g| g.reach == reach && covers(g, ask)) {
            return existing.id.clone();
        }
        self.made += 1;
        let id = fresh_id("gr-", self.made, |id| self.list.iter().any(|g| g.id == id));
        let exact = reach == Reach::Exact;
        self.list.push(Grant {
            id: id.clone(),
            who: ask.who.clone(),
            sandbox: ask.sandbox.clone(),
            reach,
            method: ask.method.clone(),
            host: ask.host.clone(),
            port: ask.port,
            path: ask.path.clone(),
            query: if exact { ask.query.clone() } else { None },
            shown_query: if exact { ask.shown_query.clone() } else { None },
            body_sha256: exact.then(|| ask.body.sha256.clone()),
            policy: ask.policy.clone(),
            rule: ask.rule,
            rule_fingerprint: ask.rule_fingerprint.clone(),
            tools: ask.tools.clone(),
            operations: ask.operations.clone(),
            by: decision.by.clone(),
            at: decision.at.clone(),
            approval: pending.id.clone(),
        });
        id
    }
}

#[cfg(test)]
#[path = "grants_tests.rs"]
mod tests;
