//! What `cordon check` (and every load) warns about a policy's rules: a rule that a more specific one overrides
//! for some hosts in the other TLS mode, two rules for the same hosts in different modes, and a rule that an
//! earlier one shadows entirely. None is an error (each can be meant), but each changes what a reader of the
//! rule would expect it to do.

use super::Policy;
use super::allowlist::{Rule, TlsMode};
use super::ceiling::host_within;

/// One warning: the index of the rule it is about, and what to know.
pub(crate) type Overlap = (usize, String);

impl Policy {
    /// The warnings about this policy's rules, in rule order.
    pub(crate) fn overlaps(&self) -> Vec<Overlap> {
        let mut out = Vec::new();
        for (j, later) in self.rules.iter().enumerate() {
            let mut told = Vec::new();
            for (i, other) in self.rules.iter().enumerate().filter(|(i, _)| *i != j) {
                match relation(other, later) {
                    Relation::Inside(what) if other.tls != later.tls && !told.contains(&what) => {
                        out.push((
                            j,
                            format!(
                                "for {what}, allow[{i}] governs (for a host, the most specific rule decides), so this \
                                 rule's tls: {} does not apply there: {what} is {}",
                                later.tls.as_str(),
                                mode_done(other.tls)
                            ),
                        ));
                        told.push(what);
                    }
                    Relation::Same if i < j => {
                        let shared: Vec<u16> = later
                            .ports
                            .iter()
                            .copied()
                            .filter(|p| other.ports.contains(p))
                            .collect();
                        if other.tls != later.tls && !shared.is_empty() {
                            let ports = shared.iter().map(u16::to_string).collect::<Vec<_>>().join(", ");
                            let consequence = match later.tls {
                                TlsMode::Tunnel => {
                                    "this rule never opens a blind tunnel there, and a tunnel rule never \
                                                    answers a request inside an interception"
                                }
                                TlsMode::Intercept => "this rule's methods and paths never apply there",
                            };
                            out.push((
                                j,
                                format!(
                                    "allow[{i}] names the same destination first, so on port {ports} a CONNECT is {}: \
                                     {consequence}",
                                    mode_done(other.tls)
                                ),
                            ));
                        } else if other.tls == later.tls && covers(other, later) {
                            out.push((
                                j,
                                format!(
                                    "never decides anything: allow[{i}] names the same destination first and allows \
                                     all this rule does"
                                ),
                            ));
                        }
                    }
                    _ => {}
                }
            }
        }
        out
    }
}

/// How one rule's destination stands to another's.
enum Relation {
    /// The same pattern or ranges.
    Same,
    /// The first is more specific for these hosts or addresses (written out), inside the second's.
    Inside(String),
    /// Disjoint, or nothing to say.
    Apart,
}

/// How `a`'s destination stands to `b`'s.
fn relation(a: &Rule, b: &Rule) -> Relation {
    match (&a.host, &b.host) {
        (Some(x), Some(y)) if x == y => Relation::Same,
        (Some(x), Some(y)) if host_within(x, y) => Relation::Inside(x.to_string()),
        (None, None) if !a.cidrs.is_empty() && a.cidrs == b.cidrs => Relation::Same,
        (None, None) => a
            .cidrs
            .iter()
            .find(|x| b.cidrs.iter().any(|y| y != *x && y.contains(*x)))
            .map_or(Relation::Apart, |x| Relation::Inside(x.to_string())),
        _ => Relation::Apart,
    }
}

/// Whether `a` allows everything `b` does (same destination): its ports, methods, paths and no approval `b`
/// lacks.
fn covers(a: &Rule, b: &Rule) -> bool {
    let ports = b.ports.iter().all(|p| a.ports.contains(p));
    let methods = match (&a.methods, &b.methods) {
        (None, _) => true,
        (Some(x), Some(y)) => y.iter().all(|m| x.contains(m)),
        (Some(_), None) => false,
    };
    let paths =
        a.paths.is_none() || (!b.path_texts.is_empty() && b.path_texts.iter().all(|p| a.path_texts.contains(p)));
    ports && methods && paths && a.action == b.action
}

fn mode_done(t: TlsMode) -> &'static str {
    match t {
        TlsMode::Intercept => "intercepted",
        TlsMode::Tunnel => "tunnelled blind",
    }
}

#[cfg(test)]
#[path = "overlaps_tests.rs"]
mod tests;
