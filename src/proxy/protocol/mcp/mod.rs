//! MCP as a [`Protocol`], for a request under a rule with an `mcp:` section: a POST's JSON-RPC messages read whole
//! and judged (`crate::mcp`), a GET (the server's stream) and a DELETE (the session's end) let through if they
//! carry no body, anything else refused; its `Mcp-Session-Id` held to the sandbox that first showed it; and, for
//! every request, what its answer is checked with ([`answer`]).

mod answer;

use std::sync::Arc;

use bytes::Bytes;
use http::header::{ACCEPT_ENCODING, UPGRADE};
use http::{Method, Request};

use crate::approval::{HeldRequest, ToolCall};
use crate::body::ProxyBody;
use crate::error::ProxyError;
use crate::mcp::answer::Lists;
use crate::mcp::judge::{McpRecord, judge};
use crate::mcp::sessions::Refusal;
use crate::mcp::tools::Server;
use crate::placeholder::redact;
use crate::policy::Rule;
use crate::policy::protocol::{Asked, Judgement, ProtocolRecord, Refused};
use crate::proxy::protocol::contract::{Context, Judged, Protocol};
use crate::proxy::protocol::read::coded;
use crate::reason::Reason;
use answer::{McpAnswer, SESSION, invalid, session_refused};

/// The Model Context Protocol (streamable HTTP, and the older HTTP+SSE transport).
pub(super) struct Mcp;

/// Its section of the audit record.
const NAME: &str = "mcp";

#[async_trait::async_trait]
impl Protocol for Mcp {
    fn name(&self) -> &'static str {
        NAME
    }

    fn explain(&self) -> &'static str {
        "reads each JSON-RPC message of a POST: lifecycle passes, each tools/call is allowed, asked or refused by \
         tool name, and tool lists coming back show only what may be called"
    }

    fn governs(&self, rule: &Rule) -> bool {
        rule.mcp.is_some()
    }

    fn invalid(&self) -> Reason {
        Reason::McpInvalid
    }

    async fn judge(&self, cx: &Context<'_>, req: &mut Request<ProxyBody>) -> Result<Judged, ProxyError> {
        let Some(rules) = cx.rule.mcp.clone() else {
            return Ok(Judged::nothing());
        };
        let (sandbox, target) = (cx.sandbox, cx.target);
        let scheme = req.uri().scheme_str().unwrap_or("http").to_owned();
        // SECURITY: pins are the server's, not a path's: any spelling of the path, and any path a server redirects
        // to, meets the pins the sandbox already has for that origin.
        let origin = format!("{scheme}://{}:{}", target.host, target.port);
        let server = Server {
            incarnation: sandbox.incarnation().clone(),
            origin: origin.clone(),
        };
        let memory = cx.memory;
        let (pinned, held) = (memory.mcp_pins.of(server), memory.mcp_held.clone());
        let lists = Lists {
            rules: rules.clone(),
            pinned: pinned.clone(),
            whose: format!("sandbox {} at {origin}", sandbox.id).into(),
            held,
            sandbox: sandbox.incarnation().clone(),
            sessions: Some((memory.mcp_sessions.clone(), Arc::<str>::from(origin.as_str()))),
        };
        let mut answer = McpAnswer {
            lists,
            policy: cx.policy.cloned(),
            target: target.clone(),
            url: req.uri().clone(),
            method: req.method().clone(),
            origin: origin.clone(),
            incarnation: sandbox.incarnation().to_owned(),
            session: None,
        };
        // SECURITY: an answer cordon filters comes uncompressed (one that does not is refused at the answer).
        req.headers_mut().remove(ACCEPT_ENCODING);
        // SECURITY: a WebSocket's frames would pass unread; MCP's transport has none.
        if req.headers().contains_key(UPGRADE) {
            return Err(invalid(
                "an MCP endpoint is not spoken to over a WebSocket (or any upgrade)".into(),
            ));
        }
        // The body was read before anything is refused (by the protocol phase), so that the refusal is what the
        // client reads (an HTTP/2 stream reset while it still sends would be all it saw). A dry run has none: its
        // note says what would be judged.
        let data = cx.body.clone();
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
                memory
                    .mcp_sessions
                    .bind(&origin, id, sandbox.incarnation())
                    .map_err(session_refused)?;
                answer.session = Some(id.to_owned());
            }
            (None, _) => {}
        }
        // SECURITY: so is the older transport's, named in the query of the URL its endpoint event gave.
        if let Some(query) = req.uri().query() {
            let ids = crate::mcp::sessions::ids_in_query(query);
            if ids
                .iter()
                .any(|id| memory.mcp_sessions.foreign(&origin, id, sandbox.incarnation()))
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
            return Ok(Judged {
                record: Some(ProtocolRecord::new(NAME, &McpRecord::default())),
                judgement: Judgement::Pass,
                answer: Some(Box::new(answer)),
            });
        }
        if *req.method() != Method::POST {
            return Err(invalid(format!(
                "an MCP endpoint takes POST, GET and DELETE, not {}",
                req.method()
            )));
        }
        // SECURITY: a body cordon cannot read as the server will is not judged, and so not sent.
        if let Some(why) = coded(req, "an MCP message") {
            return Err(invalid(why));
        }
        let Some(data) = data else {
            return Ok(Judged::nothing());
        };
        let changed = |tool: &str| {
            pinned
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .changed(tool)
        };
        let (seen, judgement) = judge(&rules, &changed, &data);
        Ok(Judged {
            record: Some(ProtocolRecord::new(NAME, &seen)),
            judgement,
            answer: Some(Box::new(answer)),
        })
    }

    fn refuse(&self, asked: &Asked, reason: Reason, message: String) -> Refused {
        crate::mcp::judge::refused(reason, message, &asked.ids, asked.batch)
    }

    fn show(&self, asked: &Asked, body: &Bytes, held: &mut HeldRequest) {
        held.tools = Some(asked.what.clone());
        held.calls = Some(calls(body));
    }
}

/// Every tool call of an MCP body with its whole arguments, pretty-printed, placeholders redacted.
fn calls(body: &Bytes) -> Vec<ToolCall> {
    crate::mcp::message::calls(body)
        .into_iter()
        .map(|c| ToolCall {
            tool: c.tool,
            arguments: redact(&serde_json::to_string_pretty(&c.arguments).unwrap_or_default()),
        })
        .collect()
}
