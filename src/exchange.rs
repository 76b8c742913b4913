//! One request's path through cordon: identify, decide, dial — and its audit record.
//!
//! Plain requests (`forward.rs`) and CONNECT tunnels (`tunnel.rs`) both walk these steps, so they are
//! judged alike; each step fills in the audit record, and `fail` turns any error into the response and
//! emits the record, so every error path is audited exactly once.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use http::{HeaderMap, Method, Response};
use tokio::net::TcpStream;

use crate::approval::Outcome;
use crate::audit::{self, Kind, Verdict};
use crate::body::ProxyBody;
use crate::conn::ConnScope;
use crate::error::ProxyError;
use crate::identity::{AuthFailure, Sandbox};
use crate::policy::Question;
use crate::session::admission::BudgetMeter;
use crate::state::{Generation, ProxyState};
use crate::target::Target;

/// A request in flight, with its audit record.
pub struct Exchange {
    /// Shared proxy state.
    pub state: Arc<ProxyState>,
    /// The configuration this exchange started under, and finishes on.
    pub generation: Arc<Generation>,
    /// The client connection, whose lifetime is tied to the sandboxes it serves.
    scope: Option<Arc<ConnScope>>,
    /// Counts plain-HTTP body bytes against the sandbox's byte budget (tunnels count at their stream).
    pub meter: Option<Arc<dyn crate::limits::Meter>>,
    kind: Kind,
    /// Counted in an aggregate record instead of one of its own.
    suppressed: bool,
    /// The client's address.
    pub client: SocketAddr,
    /// Secrets applied with `mask_echo`, and the placeholder each is masked with in the response.
    pub echo: Vec<(secrecy::SecretString, String)>,
    audit: audit::Pending,
}

impl Exchange {
    /// Begin an exchange for traffic from `client`.
    pub fn new(state: Arc<ProxyState>, client: SocketAddr, kind: Kind, method: &Method) -> Exchange {
        let mut audit = audit::Pending::start(state.audit.clone(), client, kind);
        audit.record().method = Some(method.as_str().to_string());
        Exchange {
            generation: state.current(),
            scope: None,
            meter: None,
            kind,
            suppressed: false,
            state,
            client,
            echo: Vec::new(),
            audit,
        }
    }

    /// Tie the client connection to the sandboxes identified on it (closed when one loses access).
    pub fn on_connection(mut self, scope: Arc<ConnScope>) -> Exchange {
        if let Some(original) = scope.original_dst {
            self.audit.record().original_dst = Some(original.to_string());
        }
        self.scope = Some(scope);
        self
    }

    /// The audit record being built.
    pub fn record(&mut self) -> &mut audit::Record {
        self.audit.record()
    }

    /// Counter of bytes from the client, for a body or tunnel to add to.
    pub fn up_counter(&self) -> Arc<AtomicU64> {
        self.audit.up_counter()
    }

    /// Identify the sandbox from this request alone. Failed attempts count against the source address;
    /// over `limits.auth_failures` the address gets 429 for a while, audited once per burst.
    pub fn identify(&mut self, headers: &HeaderMap) -> Result<Arc<Sandbox>, ProxyError> {
        let ip = self.client.ip();
        let limits = self.state.limits();
        // SECURITY: an address over its rate of failed authentications is refused outright until its block
        // ends, whatever it sends, so tokens cannot be guessed at line rate.
        if let Some(refusal) = limits.auth_blocked(ip) {
            return Err(self.throttled(refusal));
        }
        let sandbox = match self.state.identify(&self.generation, headers, ip) {
            Ok(s) => s,
            // Clients commonly ask without credentials first and retry with them after the 407.
            Err(AuthFailure::Missing) => return Err(ProxyError::Auth(AuthFailure::Missing)),
            Err(failure) => {
                return Err(match limits.auth_failure(ip) {
                    Ok(()) => ProxyError::Auth(failure),
                    Err(refusal) => self.throttled(refusal),
                });
            }
        };
        self.set_identity(&sandbox);
        if let Some(scope) = self.scope.clone() {
            // A CONNECT's connection turns into a tunnel, which is counted as such.
            let count = self.kind != Kind::Connect;
            scope
                .attach(&self.state, &limits, &sandbox, count)
                .map_err(ProxyError::Limited)?;
        }
        if self.kind == Kind::Http {
            self.meter = BudgetMeter::for_sandbox(limits, self.state.sessions.clone(), sandbox.clone());
        }
        Ok(sandbox)
    }

    fn throttled(&mut self, refusal: crate::limits::Refusal) -> ProxyError {
        self.state.auth_bursts.count(self.client.ip());
        self.suppressed = true;
        ProxyError::Limited(refusal)
    }

    /// The rates and the byte budget a request of `sandbox` to `target` must pass (before its decision, so
    /// that refused requests count too: a sandbox hammering a denied host is still hammering).
    pub fn admit(&mut self, sandbox: &Sandbox, target: &Target) -> Result<(), ProxyError> {
        let limits = self.state.limits();
        // Names are used as they are; only an IP destination is written out.
        let host: std::borrow::Cow<'_, str> = match target.host.as_name() {
            Some(name) => name.into(),
            None => target.host.to_string().into(),
        };
        limits
            .request(&sandbox.id, &sandbox.user, &host)
            .and_then(|()| limits.budget(&sandbox.id))
            .map_err(ProxyError::Limited)
    }

    /// Record who is talking, for requests whose identity was established before (inside a tunnel).
    pub fn set_identity(&mut self, sandbox: &Sandbox) {
        let r = self.audit.record();
        r.sandbox = Some(sandbox.id.clone());
        r.user = Some(sandbox.user.clone());
        r.policy = Some(sandbox.policy.clone());
    }

    /// Record the destination.
    pub fn set_target(&mut self, target: &Target) {
        let r = self.audit.record();
        r.host = Some(target.host.to_string());
        r.port = Some(target.port);
    }

    /// Ask the sandbox's policy. `request` is the method and path, or `None` at CONNECT. Returns the
    /// allowing rule (`None` when only report mode let it through).
    pub fn decide(
        &mut self,
        sandbox: &Sandbox,
        target: &Target,
        request: Option<(&Method, &str)>,
    ) -> Result<Option<usize>, ProxyError> {
        let decision = self
            .generation
            .policy(&sandbox.policy)
            .map(|p| p.decide(Question { target, request }));
        let r = self.audit.record();
        match decision {
            Some(d) if d.allowed => {
                r.rule = d.rule;
                r.decision = if d.deny.is_some() {
                    Verdict::WouldDeny
                } else {
                    Verdict::Allow
                };
                r.reason = d.deny.map(|reason| reason.code().to_string());
                Ok(d.rule)
            }
            Some(d) => Err(ProxyError::Denied {
                reason: d.deny.unwrap_or(crate::policy::DenyReason::NoRule),
                target: target.clone(),
            }),
            // Validation guarantees the policy exists; if it somehow does not, nothing is allowed.
            None => Err(ProxyError::Denied {
                reason: crate::policy::DenyReason::NoRule,
                target: target.clone(),
            }),
        }
    }

    /// Resolve, guard and connect; records the dialled address.
    pub async fn dial(&mut self, target: &Target) -> Result<TcpStream, ProxyError> {
        let (stream, addr) = self.generation.dialer.dial(target).await?;
        self.audit.record().dialled = Some(addr.to_string());
        Ok(stream)
    }

    /// Check placeholders and apply the sandbox's credentials to the request going upstream; the audit
    /// record names the credentials applied (never their values).
    pub async fn credentials(
        &mut self,
        sandbox: &Sandbox,
        target: &Target,
        intercepted: bool,
        req: &mut http::Request<crate::body::ProxyBody>,
    ) -> Result<(), ProxyError> {
        let generation = self.generation.clone();
        let Some(policy) = generation.policy(&sandbox.policy) else {
            // Validation guarantees the policy exists; if it somehow does not, nothing goes out.
            return Err(ProxyError::Denied {
                reason: crate::policy::DenyReason::NoRule,
                target: target.clone(),
            });
        };
        let (mut parts, body) = std::mem::replace(req, http::Request::new(crate::body::empty())).into_parts();
        let result = generation
            .credentials
            .apply(sandbox, policy, target, intercepted, &mut parts, body)
            .await;
        let done = match result {
            Ok(r) => r,
            Err(e) => {
                *req = http::Request::from_parts(parts, crate::body::empty());
                return Err(e);
            }
        };
        *req = http::Request::from_parts(parts, done.body);
        self.echo = done.echo;
        let applied = done.names;
        if !applied.is_empty() {
            self.audit.record().credentials = Some(applied);
        }
        Ok(())
    }

    /// For a rule with `action: ask`: hold the request until a human decides (or a standing grant covers it),
    /// showing them its start. Runs before any credential is attached, so nothing secret is ever shown.
    pub async fn approve(
        &mut self,
        sandbox: &Sandbox,
        target: &Target,
        rule: Option<usize>,
        req: &mut http::Request<ProxyBody>,
    ) -> Result<(), ProxyError> {
        let asks = rule
            .and_then(|i| self.generation.policy(&sandbox.policy)?.rules.get(i))
            .is_some_and(|r| r.action == crate::policy::Action::Ask);
        let (true, Some(rule)) = (asks, rule) else {
            return Ok(());
        };
        let body = std::mem::replace(req.body_mut(), crate::body::empty());
        let (start, body) = crate::credentials::body::peek(body, crate::approval::MAX_EXCERPT * 4)
            .await
            .map_err(|e| ProxyError::BadRequest {
                code: "body_unreadable",
                message: format!("the request body could not be read: {e}"),
            })?;
        *req.body_mut() = body;
        let ask = crate::approval::Ask {
            sandbox: sandbox.id.clone(),
            user: sandbox.user.clone(),
            policy: sandbox.policy.clone(),
            method: req.method().to_string(),
            host: target.host.to_string(),
            port: target.port,
            path: req.uri().path().to_string(),
            excerpt: crate::approval::excerpt(&start),
            rule,
        };
        let outcome = self.state.approvals.ask(ask).await;
        let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let (record, result) = match outcome {
            Outcome::Allowed { id, decision, waited } => {
                (approval_record(id, "allow", Some(&decision), ms(waited)), Ok(()))
            }
            Outcome::Granted { grant } => (approval_record(grant, "granted", None, 0), Ok(())),
            Outcome::Denied { id, decision, waited } => (
                approval_record(id.clone(), "deny", Some(&decision), ms(waited)),
                Err(ProxyError::ApprovalDenied { id, by: decision.by }),
            ),
            Outcome::TimedOut { id, waited } => (
                approval_record(id.clone(), "timeout", None, ms(waited)),
                Err(ProxyError::ApprovalTimedOut(
                    self.generation.config.approval.timeout,
                    id,
                )),
            ),
            Outcome::Full => (
                approval_record(String::new(), "queue_full", None, 0),
                Err(ProxyError::ApprovalQueueFull),
            ),
        };
        self.audit.record().approval = Some(record);
        result
    }

    /// Answer with this error and emit the audit record.
    pub fn fail(mut self, err: ProxyError) -> Response<ProxyBody> {
        let resp = err.response();
        let r = self.audit.record();
        r.status = Some(resp.status().as_u16());
        r.reason = Some(err.code().to_string());
        if let ProxyError::Exfiltration { credential, why } = &err {
            r.decision = Verdict::Deny;
            r.error = Some(format!("placeholder of credential {credential}: {why}"));
        } else if err.is_refusal() {
            r.decision = Verdict::Deny;
            if let ProxyError::Limited(refusal) = &err {
                r.error = Some(refusal.message.clone());
            }
        } else {
            r.error = Some(error_detail(&err));
        }
        if self.suppressed {
            self.audit.discard();
        } else {
            self.audit.finish();
        }
        resp
    }

    /// Hand the audit record over to whatever carries the exchange on (a body, a tunnel task).
    pub fn into_audit(self) -> audit::Pending {
        self.audit
    }
}

fn approval_record(
    id: String,
    outcome: &str,
    decision: Option<&crate::approval::Decision>,
    waited_ms: u64,
) -> audit::ApprovalRecord {
    audit::ApprovalRecord {
        id,
        outcome: outcome.to_string(),
        by: decision.map(|d| d.by.clone()),
        scope: decision.map(|d| format!("{:?}", d.scope).to_lowercase()),
        waited_ms,
    }
}

/// The operator-facing detail of a failure (never sent to the client).
fn error_detail(err: &ProxyError) -> String {
    match err {
        ProxyError::Dial(crate::net::DialError::Connect { addr, source, .. }) => format!("{addr}: {source}"),
        ProxyError::Dial(crate::net::DialError::Resolve { detail, .. }) => detail.clone(),
        ProxyError::CredentialUnavailable { credential, detail } => format!("credential {credential}: {detail}"),
        other => other.to_string(),
    }
}
