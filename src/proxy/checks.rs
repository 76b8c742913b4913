//! Steps 2, 4 and 5: the request is within its sandbox's rates, unambiguous, and allowed by its policy.

use http::Method;

use super::exchange::Exchange;
/// The decision's hand-over, where the protocol steps have long found it.
pub(crate) use super::handover::Permit;
use super::input::Intent;
use super::notes::{DryRefusal, Note};
use crate::error::ProxyError;
use crate::identity::Sandbox;
use crate::policy::{Action, DenyReason, Mode, Question, TlsMode};
use crate::proxy::headers;
use crate::reason::Reason;
use crate::target::{Target, check_path};

impl Exchange {
    /// Step 4: refuse a destination name that carries a credential, and what two parsers could read
    /// differently, before it is decided.
    pub(super) fn hygiene(&mut self, sandbox: &Sandbox, target: &Target, ask: &Intent) -> Result<(), ProxyError> {
        // SECURITY: a placeholder or secret as a DNS label (`<placeholder>.allowed.example`, a CONNECT host, a
        // query to the DNS responder) would leave through the resolver before any rule is asked.
        // Inside an interception, the tunnel's own name was scanned when the tunnel opened.
        let opened =
            matches!(ask, Intent::Request { inside: Some(inside), .. } if inside.spellings.has_host(&target.host));
        if let Some(name) = target.host.as_name()
            && !opened
            && let Err(refused) = self.generation.credentials.check_name(sandbox, name)
        {
            // The record must not repeat what the name carried.
            self.audit.host("[redacted]");
            return Err(refused);
        }
        let Intent::Request { req, inside } = ask else {
            return Ok(());
        };
        // SECURITY: two Host headers can be read differently by cordon and the upstream (host confusion).
        let host = headers::single_host(req.headers())?;
        if let Some(inside) = inside {
            // SECURITY: a CONNECT inside an intercepted tunnel would open a second, unpoliced tunnel.
            if req.method() == Method::CONNECT {
                return Err(ProxyError::BadRequest {
                    code: Reason::ConnectInTunnel,
                    message: "CONNECT inside an intercepted connection is not allowed".into(),
                });
            }
            // SECURITY: host confusion: every request inside an interception must be for the host and port of
            // its CONNECT, by :authority / absolute-form authority and by Host alike.
            let claimed = req
                .uri()
                .authority()
                .map(|a| a.as_str().as_bytes())
                .into_iter()
                .chain(host.map(|h| h.as_bytes()));
            let mut named = false;
            for value in claimed {
                named = true;
                if !inside.spellings.named_by(value) {
                    return Err(ProxyError::Misdirected(target.clone()));
                }
            }
            if !named {
                return Err(ProxyError::BadRequest {
                    code: Reason::MissingHost,
                    message: "the request names no host".into(),
                });
            }
        }
        let path = check_path(req.uri().path()).map_err(ProxyError::from);
        self.enforce(path)
    }

    /// Step 2: the sandbox's rates and byte budget, counted for everything it sends, readable or not
    /// (nothing is counted in a dry run); and whether its records can be written.
    pub(super) fn admit(&mut self, sandbox: &Sandbox, target: Option<&Target>, ask: &Intent) -> Result<(), ProxyError> {
        self.fx.admit(sandbox, target, ask)
    }

    /// Step 5: the sandbox's policy, asked once. A refusal is recorded by [`Exchange::refuse`]; what is
    /// allowed is recorded here.
    pub(super) fn decide(&mut self, sandbox: &Sandbox, target: &Target, ask: &Intent) -> Result<Permit, ProxyError> {
        let generation = self.generation.clone();
        // Validation guarantees the policy exists; if it somehow does not, nothing is allowed.
        let Some(policy) = self.fx.policy_for(&generation, sandbox) else {
            return Err(ProxyError::Denied {
                reason: DenyReason::NoRule,
                target: target.clone(),
            });
        };
        let (method, path) = match ask {
            Intent::Request { req, .. } => (Some(req.method()), Some(req.uri().path())),
            Intent::Tunnel | Intent::Name { .. } => (None, None),
        };
        let decided = match ask {
            Intent::Name { .. } => self.decide_name(&policy, target)?,
            _ => policy.decide(Question {
                target,
                request: method.zip(path),
                intercepted: matches!(ask, Intent::Request { inside: Some(_), .. }),
            }),
        };
        let denied = (!decided.allowed).then(|| ProxyError::Denied {
            reason: decided.deny.clone().unwrap_or(DenyReason::NoRule),
            target: target.clone(),
        });
        self.note(Note::Decided {
            rule: decided.rule,
            deny: decided.deny.clone().map(|d| {
                let why = d.describe(target);
                (d, why)
            }),
            mode: policy.mode,
            refused: denied.as_ref().map(DryRefusal::of),
        });
        // A dry run goes on past a denial (noted above, with the answer live traffic gets), to show what the
        // later steps say too.
        if let Some(denied) = denied {
            self.fx.denied(denied)?;
        }
        self.audit
            .allowed(decided.rule, decided.deny.as_ref().map(DenyReason::reason));
        let rule = decided.rule.and_then(|i| policy.rules.get(i));
        let (credentials, masked) = match (ask, method, path) {
            (Intent::Request { inside, .. }, Some(method), Some(path)) => (
                generation
                    .credentials
                    .usable(&policy, target, method, path, inside.is_some()),
                generation.credentials.masked(&policy, target),
            ),
            _ => (Vec::new(), Vec::new()),
        };
        let tls = rule.map(|r| r.tls).unwrap_or_default();
        let mut action = rule.map(|r| r.action).unwrap_or_default();
        // SECURITY: a sandbox held for violations (on_violation: hold): every request waits for a person, and a
        // tunnel cordon cannot look into is refused (there would be no request to ask about).
        if self.fx.held(sandbox) {
            match ask {
                Intent::Request { .. } => action = Action::Ask,
                Intent::Tunnel if tls == TlsMode::Tunnel => return Err(ProxyError::Held),
                Intent::Tunnel | Intent::Name { .. } => {}
            }
        }
        Ok(Permit {
            rule: decided.rule,
            tls,
            action,
            credentials,
            masked,
            policy: Some(policy),
        })
    }

    /// A DNS name: metadata and local names are refused whatever the policy says; then any rule that names
    /// the host (at any port) allows it.
    fn decide_name(
        &mut self,
        policy: &crate::policy::Policy,
        target: &Target,
    ) -> Result<crate::policy::Decision, ProxyError> {
        let name = target.host.as_name().unwrap_or_default();
        // SECURITY: metadata and local names are refused whatever the policy says.
        self.generation
            .dialer
            .guard()
            .check_name(name)
            .map_err(|r| ProxyError::Dial(crate::net::DialError::Refused(r)))?;
        // SECURITY: DNS exfiltration: a name no rule allows is never looked up, so the query stops here.
        let named = policy.names_host(name);
        Ok(crate::policy::Decision {
            allowed: named || policy.mode == Mode::Report,
            rule: None,
            deny: (!named).then_some(DenyReason::NoRule),
        })
    }
}
