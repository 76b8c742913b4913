//! Step 6's MCP part, for a request under a rule with an `mcp:` section (before approval and credentials): a
//! POST's JSON-RPC messages read whole and judged (`crate::mcp`), a GET (the server's stream) and a DELETE (the
//! session's end) let through, anything else refused; and, for every request, the filter its answer goes through.

use std::sync::{Arc, Mutex};

use http::header::{ACCEPT_ENCODING, UPGRADE};
use http::{Method, Request};

use super::checks::Permit;
use super::dry::Note;
use super::exchange::Exchange;
use crate::body::ProxyBody;
use crate::error::ProxyError;
use crate::identity::Sandbox;
use crate::mcp::answer::Lists;
use crate::mcp::judge::{Verdict, judge};
use crate::mcp::tools::Pinned;
use crate::reason::Reason;
use crate::target::Target;

/// What the MCP step hands on.
#[derive(Default)]
pub(super) struct McpStep {
    /// The tools a person must allow first, and to whom a refusal is answered (JSON-RPC ids, batch).
    pub(super) ask: Option<crate::mcp::judge::Asked>,
    /// The filter the answer goes through.
    pub(super) lists: Option<Lists>,
}

impl McpStep {
    /// A person's refusal of an MCP call as the client understands it: a JSON-RPC error, not an HTTP status.
    pub(super) fn answer(&self, e: ProxyError) -> ProxyError {
        match (&self.ask, e) {
            (Some(asked), e @ (ProxyError::ApprovalDenied { .. } | ProxyError::ApprovalTimedOut(..))) => {
                ProxyError::Mcp(crate::mcp::judge::Refused {
                    reason: e.reason(),
                    message: e.to_string(),
                    ids: asked.ids.clone(),
                    batch: asked.batch,
                })
            }
            (_, e) => e,
        }
    }
}

fn invalid(message: String) -> ProxyError {
    ProxyError::BadRequest {
        code: Reason::McpInvalid,
        message,
    }
}

impl Exchange {
    /// Judge `req` by its rule's `mcp:` section, if it has one.
    pub(super) async fn mcp(
        &mut self,
        sandbox: &Sandbox,
        target: &Target,
        decision: &Permit,
        req: &mut Request<ProxyBody>,
    ) -> Result<McpStep, ProxyError> {
        let rule = decision.rule;
        let Some((index, rules)) = rule.and_then(|i| Some((i, decision.policy.as_ref()?.rules.get(i)?.mcp.clone()?)))
        else {
            return Ok(McpStep::default());
        };
        let path = req.uri().path().to_owned();
        let endpoint = (
            sandbox.incarnation().to_string(),
            target.host.to_string(),
            target.port,
            path.clone(),
        );
        let pinned = match self.state() {
            Some(state) => state.mcp_pins.of(endpoint),
            None => Arc::new(Mutex::new(Pinned::default())),
        };
        let lists = Lists {
            rules: rules.clone(),
            pinned: pinned.clone(),
            whose: format!("sandbox {} at {}:{}{path}", sandbox.id, target.host, target.port).into(),
        };
        // SECURITY: an answer cordon filters comes uncompressed (one that does not is refused at the answer).
        req.headers_mut().remove(ACCEPT_ENCODING);
        let dry = self.state().is_none();
        if dry {
            self.note(Note::Mcp(index));
        }
        // SECURITY: a WebSocket's frames would pass unread; MCP's transport has none.
        if req.headers().contains_key(UPGRADE) {
            return Err(invalid(
                "an MCP endpoint is not spoken to over a WebSocket (or any upgrade)".into(),
            ));
        }
        if matches!(*req.method(), Method::GET | Method::DELETE) {
            self.audit.mcp(crate::mcp::judge::Seen::default());
            return Ok(McpStep {
                ask: None,
                lists: Some(lists),
            });
        }
        // Read before anything is refused, so that the refusal is what the client reads (an HTTP/2 stream reset
        // while it still sends would be all it saw). A dry run has no body: its note says what would be judged.
        let data = if dry {
            None
        } else {
            Some(super::request::read_whole(req).await?)
        };
        if *req.method() != Method::POST {
            return Err(invalid(format!(
                "an MCP endpoint takes POST, GET and DELETE, not {}",
                req.method()
            )));
        }
        // SECURITY: a body cordon cannot read as the server will is not judged, and so not sent.
        if let Some(why) = super::request::coded(req, "an MCP message") {
            return Err(invalid(why));
        }
        let Some(data) = data else {
            return Ok(McpStep::default());
        };
        let changed = |tool: &str| {
            pinned
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .changed(tool)
        };
        let (seen, verdict) = judge(&rules, &changed, &data);
        self.audit.mcp(seen);
        match verdict {
            Verdict::Pass => Ok(McpStep {
                ask: None,
                lists: Some(lists),
            }),
            Verdict::Ask(asked) => Ok(McpStep {
                ask: Some(asked),
                lists: Some(lists),
            }),
            Verdict::Invalid(why) => Err(invalid(why)),
            Verdict::Refused(refused) => Err(ProxyError::Mcp(refused)),
        }
    }
}
