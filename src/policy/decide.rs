//! The decision: which rule, if any, allows a destination (and, for HTTP, a method and path).

use crate::reason::Reason;
use std::borrow::Cow;

use http::Method;

use super::{Mode, Policy, Rule, TlsMode};
use crate::target::{Host, Target};

/// What is being asked.
#[derive(Debug, Clone, Copy)]
pub struct Question<'a> {
    /// The normalised destination.
    pub target: &'a Target,
    /// Method and path (no query) of an HTTP request, or `None` at CONNECT.
    pub request: Option<(&'a Method, &'a str)>,
    /// Whether the request came inside an intercepted TLS connection. Then only `tls: intercept` rules answer:
    /// a `tls: tunnel` rule never decides a request cordon reads inside an interception.
    pub intercepted: bool,
}

impl<'a> Question<'a> {
    /// A CONNECT (or a transparent TLS connection): host and port only.
    pub fn connect(target: &'a Target) -> Question<'a> {
        Question {
            target,
            request: None,
            intercepted: false,
        }
    }
}

/// Why a request is not allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DenyReason {
    /// No rule names this host (or IP).
    NoRule,
    /// Rules name the host, but not this port.
    Port,
    /// Rules name host and port, but not this method.
    Method,
    /// Rules name host, port and method, but not this path.
    Path,
}

impl DenyReason {
    /// Stable machine-readable reason.
    pub(crate) fn reason(&self) -> Reason {
        match self {
            DenyReason::NoRule => Reason::NoRule,
            DenyReason::Port => Reason::PortNotAllowed,
            DenyReason::Method => Reason::MethodNotAllowed,
            DenyReason::Path => Reason::PathNotAllowed,
        }
    }

    /// A short sentence for people.
    pub(crate) fn describe(&self, target: &Target) -> String {
        match self {
            DenyReason::NoRule => format!("no rule allows {}", target.host),
            DenyReason::Port => format!("port {} is not allowed for {}", target.port, target.host),
            DenyReason::Method => format!("this method is not allowed for {target}"),
            DenyReason::Path => format!("this path is not allowed for {target}"),
        }
    }
}

/// The outcome, with what the audit record needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request may proceed (true in report mode even when a rule would deny).
    pub(crate) allowed: bool,
    /// Index of the rule that allowed it.
    pub(crate) rule: Option<usize>,
    /// Why it is (or, in report mode, would be) denied.
    pub(crate) deny: Option<DenyReason>,
}

impl Policy {
    /// Decide. Pure and synchronous.
    pub fn decide(&self, q: Question<'_>) -> Decision {
        let verdict = self.first_allowing(q);
        match (verdict, self.mode) {
            (Ok(rule), _) => Decision {
                allowed: true,
                rule: Some(rule),
                deny: None,
            },
            (Err(reason), Mode::Enforce) => Decision {
                allowed: false,
                rule: None,
                deny: Some(reason),
            },
            (Err(reason), Mode::Report) => Decision {
                allowed: true,
                rule: None,
                deny: Some(reason),
            },
        }
    }

    /// The rules that govern `host`: those of the most specific pattern that matches it, in order. An exact
    /// name is more specific than any `*.suffix`, a longer suffix more than a shorter one, and for an IP literal
    /// a longer prefix more than a shorter one. Less specific rules never answer for the host.
    pub(crate) fn governing(&self, host: &Host) -> Cow<'_, [usize]> {
        match host {
            // Borrowed from the index: a decision for a name allocates nothing.
            Host::Name(name) => Cow::Borrowed(self.hosts.governing(name)),
            // SECURITY: a host glob never matches an IP literal; only `cidrs` rules can allow one.
            Host::V4(_) | Host::V6(_) => match host.ip() {
                Some(ip) => Cow::Owned(self.governing_net(ipnet::IpNet::from(ip))),
                None => Cow::Borrowed(&[]),
            },
        }
    }

    /// The rules that govern every address of `net`: those whose longest range holding all of `net` is the
    /// longest of any rule, in order.
    pub(crate) fn governing_net(&self, net: ipnet::IpNet) -> Vec<usize> {
        let best = |r: &Rule| {
            r.cidrs
                .iter()
                .filter(|c| c.contains(&net))
                .map(|c| c.prefix_len())
                .max()
        };
        let Some(top) = self.rules.iter().filter_map(best).max() else {
            return Vec::new();
        };
        (0..self.rules.len())
            .filter(|&i| self.rules.get(i).and_then(best) == Some(top))
            .collect()
    }

    /// The first governing rule that allows, or the most specific reason none does.
    fn first_allowing(&self, q: Question<'_>) -> Result<usize, DenyReason> {
        let governing = self.governing(&q.target.host);
        // SECURITY: a tunnel rule never answers inside an interception, even for a host it names.
        let candidates = governing.iter().filter_map(|&i| {
            let rule = self.rules.get(i)?;
            (!q.intercepted || rule.tls == TlsMode::Intercept).then_some((i, rule))
        });
        let mut furthest = DenyReason::NoRule;
        for (i, rule) in candidates {
            if furthest == DenyReason::NoRule {
                furthest = DenyReason::Port;
            }
            match check_rule(rule, q) {
                Ok(()) => return Ok(i),
                Err(reason) => {
                    if rank(&reason) > rank(&furthest) {
                        furthest = reason;
                    }
                }
            }
        }
        Err(furthest)
    }
}

/// How far a request got through a rule: the deepest failure is the most useful explanation.
fn rank(r: &DenyReason) -> u8 {
    match r {
        DenyReason::NoRule => 0,
        DenyReason::Port => 1,
        DenyReason::Method => 3,
        DenyReason::Path => 4,
    }
}

fn check_rule(rule: &Rule, q: Question<'_>) -> Result<(), DenyReason> {
    if !rule.ports.contains(&q.target.port) {
        return Err(DenyReason::Port);
    }
    // At CONNECT only host and port are known; a rule that limits methods or paths is intercepted (never
    // `tls: tunnel`, which validation refuses), so each request inside is decided again.
    match q.request {
        None => Ok(()),
        Some((method, path)) => {
            if let Some(methods) = &rule.methods
                && !methods.contains(method)
            {
                return Err(DenyReason::Method);
            }
            if let Some(paths) = &rule.paths
                && !paths.is_match(path)
            {
                return Err(DenyReason::Path);
            }
            Ok(())
        }
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "decide_proptests.rs"]
mod proptests;
