//! Step 6 for an HTTP request (plain, or inside an interception): shaped for the upstream, approved,
//! given its credentials, sent through the sandbox's pool, and its response streamed back carrying the
//! audit record.

use std::sync::Arc;
use std::time::Duration;

use http::header::{ACCEPT_ENCODING, CONNECTION, HOST, IF_RANGE, RANGE, SEC_WEBSOCKET_EXTENSIONS, UPGRADE};
use http::uri::{PathAndQuery, Scheme};
use http::{HeaderValue, Request, Uri, Version};
use http_body_util::BodyExt;

use super::exchange::Exchange;
use super::handover::Permit;
use super::handover::Reply;
use super::input::{Inside, Outcome};
use crate::approval::{self, Resolution};
use crate::audit::ApprovalRecord;
use crate::body::{Counted, ProxyBody};
use crate::error::ProxyError;
use crate::identity::Sandbox;
use crate::leak::scan::body::ScanVerdict;
use crate::limits::{LimitRefusal, Meter};
use crate::policy::Action;
use crate::proxy::headers;
use crate::reason::Reason;
use crate::target::Target;

/// A WebSocket handshake: HTTP/1.1 end to end, and after a 101 the two upgraded streams are spliced.
pub(crate) fn is_websocket<B>(req: &Request<B>) -> bool {
    req.version() == Version::HTTP_11
        && req
            .headers()
            .get(UPGRADE)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"websocket"))
}

/// Shape, approve, credential and send one request; the response carries the audit record to its end.
pub(super) async fn forward(
    mut ex: Exchange,
    sandbox: Arc<Sandbox>,
    target: Target,
    decision: Permit,
    req: Request<ProxyBody>,
    inside: Option<Arc<Inside>>,
) -> Outcome {
    // Only inside an interception: a plain request that asks to upgrade is forwarded as a plain request.
    let websocket = inside.is_some() && is_websocket(&req);
    // Plain HTTP bodies count against the sandbox's byte budget here (a tunnel counts at its stream).
    let meter = ex.meter(&sandbox);
    let prepared = async {
        let mut out = ex.outgoing(req, &target, inside.is_some(), meter.clone())?;
        if websocket {
            out.headers_mut()
                .insert(CONNECTION, HeaderValue::from_static("upgrade"));
            out.headers_mut().insert(UPGRADE, HeaderValue::from_static("websocket"));
            // SECURITY: frames are masked and scanned one by one, so no compression may hide what they say.
            out.headers_mut().remove(SEC_WEBSOCKET_EXTENSIONS);
        }
        if !decision.masked.is_empty() {
            // SECURITY: what comes back from a destination whose secrets are masked comes whole (no Range
            // may split a secret over two answers) and, preferably, uncompressed (a compressed answer is
            // decompressed to be masked).
            for name in [ACCEPT_ENCODING, RANGE, IF_RANGE] {
                out.headers_mut().remove(name);
            }
        }
        // What an MCP or GraphQL (any protocol's) endpoint's rule says about the messages, before anyone is asked.
        let judged = ex
            .protocols(super::protocol::PROTOCOLS, &sandbox, &target, &decision, &mut out)
            .await?;
        // Before any credential is attached, so nothing secret is ever shown to the approver.
        ex.approve(&sandbox, &target, &decision, judged.asking.as_ref(), &mut out)
            .await
            .map_err(|e| judged.refusal(e))?;
        // SECURITY: never over cleartext: plain HTTP gets no credential, and a placeholder in it is refused.
        let (mut reply, scan) = ex.credentials(&sandbox, &target, &decision, &mut out, meter).await?;
        reply.protocol = judged.answer;
        Ok((out, reply, scan))
    }
    .await;
    let (out, reply, mut scan) = match prepared {
        Ok(out) => out,
        Err(e) => return ex.refuse(e),
    };
    let generation = ex.generation.clone();
    let sent = ex
        .fx
        .send(&generation, &sandbox, &target, inside.as_ref(), websocket, out)
        .await;
    match sent {
        // A dry run sends nothing: what it would meet on the way is noted.
        None => Outcome::Dry,
        Some(Ok(resp)) if websocket => ex.respond_upgrade(resp, decision.credentials, reply).await,
        Some(Ok(resp)) => ex.respond(resp.map(crate::body::boxed), reply).await,
        Some(Err(e)) => {
            // The body scan ended the upload: the sandbox hears why, not that the upstream failed.
            let e = ex.scan_refusal(&sandbox, &mut scan).unwrap_or(e);
            ex.refuse(e)
        }
    }
}

impl Exchange {
    /// The request as it goes upstream: hop-by-hop headers stripped, Host from the target (RFC 9112 §3.2.2:
    /// the absolute-form authority wins over whatever Host said), absolute URI for the pool, body counted.
    fn outgoing(
        &self,
        req: Request<ProxyBody>,
        target: &Target,
        intercepted: bool,
        meter: Option<Arc<dyn Meter>>,
    ) -> Result<Request<ProxyBody>, ProxyError> {
        let (scheme, default_port) = if intercepted {
            (Scheme::HTTPS, 443)
        } else {
            (Scheme::HTTP, 80)
        };
        let (mut parts, body) = req.into_parts();
        headers::strip_request(&mut parts.headers);
        parts.headers.remove(HOST);
        let pq = parts
            .uri
            .path_and_query()
            .cloned()
            .unwrap_or_else(|| PathAndQuery::from_static("/"));
        parts.uri = Uri::builder()
            .scheme(scheme)
            .authority(target.authority(default_port))
            .path_and_query(pq)
            .build()
            .map_err(|e| ProxyError::BadRequest {
                code: Reason::BadHost,
                message: format!("the destination cannot be written as a URI: {e}"),
            })?;
        parts.version = Version::HTTP_11;
        let body = Counted::new(body, self.audit.up_counter(), None::<()>)
            .metered(meter, true)
            .boxed_unsync();
        Ok(Request::from_parts(parts, body))
    }

    /// For a rule with `action: ask`, or what its protocol's section asks for (`held`: MCP tools, GraphQL
    /// operations): hold the request until a human decides (or a standing grant covers it), showing them its start.
    async fn approve(
        &mut self,
        sandbox: &Sandbox,
        target: &Target,
        decision: &Permit,
        held: Option<&super::protocol::step::Asking>,
        req: &mut Request<ProxyBody>,
    ) -> Result<(), ProxyError> {
        let Some(rule) = decision
            .rule
            .filter(|_| decision.action == Action::Ask || held.is_some())
        else {
            return Ok(());
        };
        // The approver sees the whole body's length and digest, and an `exact` grant matches on them: the body
        // is read whole first (bounded, as a scanned body is).
        let data = super::protocol::read::read_whole(req).await?;
        let Some(asking) = decision.policy.as_ref().and_then(|p| p.rules.get(rule)) else {
            return Err(ProxyError::Internal);
        };
        let ask = super::ask::ask(sandbox, target, req, &data, rule, asking, held);
        let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        // A dry run asks no one: it notes that the request would wait.
        let Some(resolution) = self.fx.ask(rule, ask).await else {
            return Ok(());
        };
        let (record, result) = match resolution {
            Resolution::Allowed { id, decision, waited } => {
                (approval_record(id, "allow", Some(&decision), ms(waited)), Ok(()))
            }
            Resolution::Granted { grant } => (approval_record(grant, "granted", None, 0), Ok(())),
            Resolution::Denied { id, decision, waited } => (
                approval_record(id.clone(), "deny", Some(&decision), ms(waited)),
                Err(ProxyError::ApprovalDenied { id, by: decision.by }),
            ),
            Resolution::TimedOut { id, waited } => (
                approval_record(id.clone(), "timeout", None, ms(waited)),
                Err(ProxyError::ApprovalTimedOut(
                    self.generation.config.approval.timeout,
                    id,
                )),
            ),
            Resolution::Full => (
                approval_record(String::new(), "queue_full", None, 0),
                Err(ProxyError::ApprovalQueueFull),
            ),
            Resolution::Limited { over, max, retry_after } => {
                let (reason, whose, setting) = match over {
                    approval::Over::Sandbox => (
                        LimitRefusal::APPROVAL_SANDBOX_LIMIT,
                        "this sandbox",
                        "approval.max_pending_per_sandbox",
                    ),
                    approval::Over::User => (
                        LimitRefusal::APPROVAL_USER_LIMIT,
                        "this sandbox's user",
                        "approval.max_pending_per_user",
                    ),
                };
                (
                    approval_record(String::new(), reason.code(), None, 0),
                    Err(ProxyError::Limited(LimitRefusal {
                        reason,
                        // Whole seconds, rounded up: a slot is free by then.
                        retry_after: Duration::from_secs(
                            retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0),
                        ),
                        message: format!("{max} requests of {whose} already wait for approval ({setting})"),
                    })),
                )
            }
        };
        self.audit.approval(record);
        result
    }

    /// Check placeholders and apply the credentials the decision found usable; the audit record names the
    /// credentials applied (never their values). Returns what the response step needs to keep secrets in (its
    /// masking, and `meter` for the body coming back) and the request body's scan, which the send step asks when
    /// the upload ended early.
    async fn credentials(
        &mut self,
        sandbox: &Sandbox,
        target: &Target,
        decision: &Permit,
        req: &mut Request<ProxyBody>,
        meter: Option<Arc<dyn Meter>>,
    ) -> Result<(Reply, Option<ScanVerdict>), ProxyError> {
        let generation = self.generation.clone();
        let attached = self
            .fx
            .credentials(&generation, sandbox, target, decision, req, meter)
            .await?;
        self.audit.credentials(attached.names);
        Ok((attached.reply, attached.scan))
    }

    /// The meter of a plain HTTP exchange's bodies, against the sandbox's byte budget (none in a dry run, and none
    /// for a request inside a tunnel, whose stream counts).
    fn meter(&self, sandbox: &Arc<Sandbox>) -> Option<Arc<dyn Meter>> {
        self.fx.meter(self.kind, sandbox)
    }
}

fn approval_record(
    id: String,
    outcome: &str,
    decision: Option<&approval::HumanDecision>,
    waited_ms: u64,
) -> ApprovalRecord {
    ApprovalRecord {
        id,
        outcome: outcome.to_string(),
        by: decision.map(|d| d.by.clone()),
        scope: decision.map(|d| d.scope.as_str().to_owned()),
        waited_ms,
    }
}
