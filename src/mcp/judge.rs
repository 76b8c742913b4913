//! The request side: what a rule's `mcp:` section says about the messages of one POST. Every message is judged;
//! a batch goes only if every message of it may, and waits for a person if one of its tool calls is under `ask`.

use serde_json::Value;

use super::message::{self, Message};
use crate::policy::mcp::{CALL, McpRules, ToolVerdict};
use crate::policy::protocol::{Asked, Judgement, Refused};
use crate::reason::Reason;

/// What the audit record's `mcp` section says about the MCP traffic of one request: the method, the tool and the
/// id of the message that decided (the refused one, else the first tool call, else the first message), and how
/// many there were.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub(crate) struct McpRecord {
    /// The JSON-RPC method (`tools/call`, `initialize`, ...); absent for the client's answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) method: Option<String>,
    /// For a `tools/call`: the tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool: Option<String>,
    /// The request's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<Value>,
    /// How many messages the body had, when it was a batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) batch: Option<usize>,
}

/// Judge the POST body `body` against `rules`; `changed` says whether a tool's meaning changed since the sandbox
/// first saw it.
pub(crate) fn judge(rules: &McpRules, changed: &dyn Fn(&str) -> bool, body: &[u8]) -> (McpRecord, Judgement) {
    let (messages, batch) = match message::parse(body) {
        Ok(parsed) => parsed,
        Err(why) => return (McpRecord::default(), Judgement::Invalid(why)),
    };
    let ids: Vec<Value> = messages.iter().filter_map(|m| m.id().cloned()).collect();
    let seen_of = |m: &Message, tool: Option<String>| McpRecord {
        method: m.method().map(str::to_owned),
        tool,
        id: m.id().cloned(),
        batch: batch.then_some(messages.len()),
    };
    let count = batch.then_some(messages.len());
    let refuse = |reason: Reason, message: String| refused(reason, message, &ids, count);
    let mut first: Option<McpRecord> = None;
    let mut asked = Vec::new();
    for m in &messages {
        let Some(method) = m.method() else {
            // The client's answer to the server's own request: nothing to judge.
            first.get_or_insert_with(|| seen_of(m, None));
            continue;
        };
        if method != CALL {
            if !rules.method(method) {
                let why = if crate::policy::mcp::well_formed(method) {
                    format!("the method {method:?} is not one this endpoint's rule allows")
                } else {
                    format!(
                        "the method {method:?} is not a name MCP allows (ASCII letters, digits, '_', '-', '.', '/')"
                    )
                };
                return (
                    seen_of(m, None),
                    Judgement::Refused(refuse(Reason::McpMethodDenied, why)),
                );
            }
            first.get_or_insert_with(|| seen_of(m, None));
            continue;
        }
        let params = match m {
            Message::Request { params, .. } => params.as_ref(),
            // A tools/call that asks for no answer is still a call.
            _ => None,
        };
        let call = match message::call(params) {
            Ok(call) => call,
            Err(why) => return (seen_of(m, None), Judgement::Invalid(why)),
        };
        let seen = seen_of(m, Some(call.tool.clone()));
        let tool = &call.tool;
        match rules.tool(tool) {
            ToolVerdict::Deny => {
                let why = format!("the tool {tool:?} is denied on this endpoint");
                return (seen, Judgement::Refused(refuse(Reason::McpToolDenied, why)));
            }
            ToolVerdict::Unnamed => {
                let why = format!("the tool {tool:?} is not one this endpoint's rule allows");
                return (seen, Judgement::Refused(refuse(Reason::McpToolDenied, why)));
            }
            ToolVerdict::Malformed => {
                let why = format!(
                    "the tool name {tool:?} is not one MCP allows (1 to 128 ASCII letters, digits, '_', '-', '.', '/'), \
                     so cordon cannot tell it from a name the rule denies"
                );
                return (seen, Judgement::Refused(refuse(Reason::McpToolDenied, why)));
            }
            _ if changed(tool) => {
                let why = format!("the tool {tool:?} changed since this sandbox first saw it");
                return (seen, Judgement::Refused(refuse(Reason::McpToolChanged, why)));
            }
            ToolVerdict::Ask => asked.push(tool.clone()),
            ToolVerdict::Allow => {}
        }
        if first.as_ref().is_none_or(|f| f.tool.is_none()) {
            first = Some(seen);
        }
    }
    let seen = first.unwrap_or_default();
    if asked.is_empty() {
        (seen, Judgement::Pass)
    } else {
        (
            seen,
            Judgement::Ask(Asked {
                what: asked,
                ids,
                batch: count,
            }),
        )
    }
}

/// A refusal in MCP's words: one JSON-RPC error per request (an array for a batch, `batch` being its size),
/// code -32001, the reason code in `data`.
pub(crate) fn refused(reason: Reason, message: String, ids: &[Value], batch: Option<usize>) -> Refused {
    let error = |id: &Value| {
        serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                "code": ERROR_CODE,
                "message": format!("cordon refused this: {message} ({})", reason.code()),
                // The reason, and what the agent reads of any refusal (docs/src/refused.md).
                "data": reason.in_protocol_facts(),
            }
        })
    };
    let value = match (batch, ids) {
        (Some(_), ids) => Value::Array(ids.iter().map(error).collect()),
        (None, [id, ..]) => error(id),
        // A notification has no id to answer: JSON-RPC's null id.
        (None, []) => error(&Value::Null),
    };
    Refused {
        reason,
        message,
        content_type: "application/json",
        body: serde_json::to_vec(&value).unwrap_or_default(),
    }
}

/// The JSON-RPC error code of cordon's refusals (in the implementation-defined server error range).
pub(crate) const ERROR_CODE: i64 = -32001;

#[cfg(test)]
#[path = "judge_tests.rs"]
mod tests;
