//! Step 6's MCP part, for a request under a rule with an `mcp:` section (before approval and credentials): a
//! POST's JSON-RPC messages read whole and judged (`crate::mcp`), a GET (the server's stream) and a DELETE (the
//! session's end) let through if they carry no body, anything else refused; its `Mcp-Session-Id` held to the
//! sandbox that first showed it; and, for every request, what its answer is checked with
//! (`super::mcp_answer`).

use std::sync::{Arc, Mutex};

use http::header::{ACCEPT_ENCODING, UPGRADE};
use http::{Method, Request};

use super::mcp_answer::{McpAnswer, SESSION, invalid, session_refused};
use crate::body::ProxyBody;
use crate::error::ProxyError;
use crate::identity::Sandbox;
use crate::mcp::answer::Lists;
use crate::mcp::judge::{Verdict, judge};
use crate::mcp::sessions::Refusal;
use crate::mcp::tools::{Pinned, Server};
use crate::proxy::checks::Permit;
use crate::proxy::exchange::Exchange;
use crate::proxy::notes::Note;
use crate::target::Target;

/// What the MCP step hands on.
#[derive(Default)]
pub(crate) struct McpStep {
    /// The tools a person must allow first, and to whom a refusal is answered (JSON-RPC ids, batch).
    pub(crate) ask: Option<crate::mcp::judge::Asked>,
    /// What the answer is checked and filtered with.
    pub(crate) answer: Option<McpAnswer>,
}

impl McpStep {
    /// A person's refusal of an MCP call as the client understands it: a JSON-RPC error, not an HTTP status.
    pub(crate) fn answer(&self, e: ProxyError) -> ProxyError {
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

impl Exchange {
    /// Judge `req` by its rule's `mcp:` section, if it has one.
    pub(crate) async fn mcp(
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
        let scheme = req.uri().scheme_str().unwrap_or("http").to_owned();
        // SECURITY: pins are the server's, not a path's: any spelling of the path, and any path a server redirects
        // to, meets the pins the sandbox already has for that origin.
        let origin = format!("{scheme}://{}:{}", target.host, target.port);
        let server = Server {
            incarnation: sandbox.incarnation().to_string(),
            origin: origin.clone(),
        };
        let (pinned, held) = match self.state() {
            Some(state) => (state.mcp_pins.of(server), state.mcp_held.clone()),
            None => (Arc::new(Mutex::new(Pinned::default())), Arc::default()),
        };
        let lists = Lists {
            rules: rules.clone(),
            pinned: pinned.clone(),
            whose: format!("sandbox {} at {origin}", sandbox.id).into(),
            held,
            sandbox: sandbox.incarnation().into(),
            sessions: self
                .state()
                .map(|state| (state.mcp_sessions.clone(), Arc::<str>::from(origin.as_str()))),
        };
        let mut answer = McpAnswer {
            lists,
            policy: decision.policy.clone(),
            target: target.clone(),
            url: req.uri().clone(),
            method: req.method().clone(),
            origin: origin.clone(),
            incarnation: sandbox.incarnation().to_owned(),
            session: None,
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
        // Read before anything is refused, so that the refusal is what the client reads (an HTTP/2 stream reset
        // while it still sends would be all it saw). A dry run has no body: its note says what would be judged.
        let data = if dry {
            None
        } else {
            Some(crate::proxy::request::read_whole(req).await?)
        };
        // SECURITY: a session id is its first sandbox's: another's use of it is refused before anything is sent.
        let mut sessions = req.headers().get_all(SESSION).iter();
        match (sessions.next(), sessions.next()) {
            (Some(_), Some(_)) => return Err(invalid("an MCP request names one Mcp-Session-Id, not several".into())),
            (Some(id), None) => {
                let id = id.to_str().map_err(|_| {
                    session_refused(Refusal::Malformed(
                        "an Mcp-Session-Id of visible ASCII characters".into(),
                    ))
                })?;
                if let Some(state) = self.state() {
                    state
                        .mcp_sessions
                        .bind(&origin, id, sandbox.incarnation())
                        .map_err(session_refused)?;
                }
                answer.session = Some(id.to_owned());
            }
            (None, _) => {}
        }
        // SECURITY: so is the older transport's, named in the query of the URL its endpoint event gave.
        if let (Some(state), Some(query)) = (self.state(), req.uri().query()) {
            let ids = crate::mcp::sessions::ids_in_query(query);
            if ids
                .iter()
                .any(|id| state.mcp_sessions.foreign(&origin, id, sandbox.incarnation()))
            {
                return Err(ProxyError::McpSessionForeign);
            }
        }
        if matches!(*req.method(), Method::GET | Method::DELETE) {
            // SECURITY: MCP's GET and DELETE carry no message; a body on one would reach the server unjudged.
            if data.as_ref().is_some_and(|d| !d.is_empty()) {
                return Err(invalid(format!(
                    "an MCP {} carries no body (JSON-RPC messages go by POST, where they are judged)",
                    req.method()
                )));
            }
            self.audit.mcp(crate::mcp::judge::Seen::default());
            return Ok(McpStep {
                ask: None,
                answer: Some(answer),
            });
        }
        if *req.method() != Method::POST {
            return Err(invalid(format!(
                "an MCP endpoint takes POST, GET and DELETE, not {}",
                req.method()
            )));
        }
        // SECURITY: a body cordon cannot read as the server will is not judged, and so not sent.
        if let Some(why) = crate::proxy::request::coded(req, "an MCP message") {
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
                answer: Some(answer),
            }),
            Verdict::Ask(asked) => Ok(McpStep {
                ask: Some(asked),
                answer: Some(answer),
            }),
            Verdict::Invalid(why) => Err(invalid(why)),
            Verdict::Refused(refused) => Err(ProxyError::Mcp(refused)),
        }
    }
}
