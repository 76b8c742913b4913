//! The JSON-RPC 2.0 messages an MCP client sends in a POST body: one message, or a batch (an array) of them,
//! read strictly. Every member of a message is known (`jsonrpc`, `id`, `method`, `params`, `result`, `error`),
//! and no object anywhere in the body has a member twice: a member two parsers could read as two different values
//! (cordon the last, a server the first) would let a message be judged, or shown to an approver, as one thing and
//! run as another.

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

/// The most messages in one batch.
const MOST_IN_BATCH: usize = 256;

/// One message as judged.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Message {
    /// A request: it has an id, and is answered.
    Request {
        id: Value,
        method: String,
        params: Option<Value>,
    },
    /// A notification: no id, no answer.
    Notification { method: String },
    /// The client's answer to a request of the server's (sampling, elicitation, roots).
    Response,
}

impl Message {
    /// The method, for a request or notification.
    pub(crate) fn method(&self) -> Option<&str> {
        match self {
            Message::Request { method, .. } | Message::Notification { method } => Some(method),
            Message::Response => None,
        }
    }

    /// The id, for a request.
    pub(crate) fn id(&self) -> Option<&Value> {
        match self {
            Message::Request { id, .. } => Some(id),
            _ => None,
        }
    }
}

/// A message as written: every member it may have, each at most once.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a JSON-RPC message (a JSON object)")]
struct WireMessage {
    jsonrpc: String,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    method: Option<String>,
    #[serde(default, deserialize_with = "present")]
    params: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Value>,
}

/// `Some` for a member that is there, `null` included (absent is `None`).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// A `tools/call`'s params: the tool's name once, its arguments (other members, such as `_meta`, pass).
#[derive(Deserialize)]
struct CallParams {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(rename = "_meta", default)]
    _meta: Option<IgnoredAny>,
}

/// A tool call: the tool's name and its arguments (`null` when none).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Call {
    pub(crate) tool: String,
    pub(crate) arguments: Value,
}

/// The tool a `tools/call` request's `params` name, read as strictly as the message.
pub(crate) fn call(params: Option<&Value>) -> Result<Call, String> {
    let params = params
        .filter(|p| p.is_object())
        .ok_or("a tools/call names its tool in params, an object")?;
    let p =
        CallParams::deserialize(params).map_err(|e| format!("the params of a tools/call are not a tool call: {e}"))?;
    Ok(Call {
        tool: p.name,
        arguments: p.arguments.unwrap_or(Value::Null),
    })
}

/// Every tool call of a POST body (its `tools/call` requests), in order: what a person deciding on the body is
/// shown whole. Nothing when the body is not JSON-RPC (the judge refuses such a body before anyone is asked).
pub(crate) fn calls(body: &[u8]) -> Vec<Call> {
    let Ok((messages, _)) = parse(body) else {
        return Vec::new();
    };
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Request { method, params, .. } if method == crate::policy::mcp::CALL => call(params.as_ref()).ok(),
            _ => None,
        })
        .collect()
}

/// The messages of a POST body, and whether it was a batch; or why it is not JSON-RPC.
pub(crate) fn parse(body: &[u8]) -> Result<(Vec<Message>, bool), String> {
    let start = body.iter().position(|b| !b.is_ascii_whitespace());
    match start.map(|i| body[i]) {
        Some(b'{' | b'[') => {}
        Some(_) => return Err("the body is not a JSON-RPC message (an object) or batch (an array)".into()),
        None => return Err("an empty body".into()),
    }
    // SECURITY: no member twice in any object of the body (read before anything is judged).
    crate::body::json::unique_members(body).map_err(|e| format!("not JSON-RPC: {e}"))?;
    let (raws, batch) = match start.map(|i| body[i]) {
        Some(b'{') => (vec![from::<WireMessage>(body)?], false),
        Some(b'[') => {
            let raws: Vec<WireMessage> = from(body)?;
            if raws.is_empty() {
                return Err("an empty batch".into());
            }
            if raws.len() > MOST_IN_BATCH {
                return Err(format!("a batch of {} messages (at most {MOST_IN_BATCH})", raws.len()));
            }
            (raws, true)
        }
        _ => return Err("the body is not a JSON-RPC message (an object) or batch (an array)".into()),
    };
    let messages = raws
        .into_iter()
        .enumerate()
        .map(|(i, raw)| {
            message(raw).map_err(|e| {
                if batch {
                    format!("message {i} of the batch: {e}")
                } else {
                    e
                }
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((messages, batch))
}

fn from<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, String> {
    serde_json::from_slice(body).map_err(|e| format!("not JSON-RPC: {e}"))
}

fn message(raw: WireMessage) -> Result<Message, String> {
    if raw.jsonrpc != "2.0" {
        return Err(format!("jsonrpc is {:?}; JSON-RPC 2.0 says \"2.0\"", raw.jsonrpc));
    }
    match (raw.method, raw.id) {
        (Some(method), id) => {
            if raw.result.is_some() || raw.error.is_some() {
                return Err(format!("a {method} message that is also an answer (result or error)"));
            }
            if let Some(p) = &raw.params
                && !(p.is_object() || p.is_array())
            {
                return Err(format!("the params of {method} are neither an object nor an array"));
            }
            match id {
                None => Ok(Message::Notification { method }),
                Some(id) if id.is_string() || id.is_i64() || id.is_u64() => Ok(Message::Request {
                    id,
                    method,
                    params: raw.params,
                }),
                Some(id) => Err(format!("the id {id} of {method} is neither a string nor an integer")),
            }
        }
        (None, Some(_)) => match (raw.result.is_some(), raw.error.is_some()) {
            (true, false) | (false, true) if raw.params.is_none() => Ok(Message::Response),
            _ => Err("an answer must have exactly one of result and error, and no params".into()),
        },
        (None, None) => Err("a message with neither a method nor an id".into()),
    }
}

#[cfg(test)]
#[path = "message_tests.rs"]
mod tests;
