//! The answers an MCP endpoint sends back, on their way to the sandbox: a server-sent event stream is read event
//! by event and each event's data filtered as it comes, never buffered whole (one event at most [`MOST_EVENT`]);
//! any other answer is read whole (at most [`MOST_JSON`]) and, if it is JSON, each message in it filtered. The filter is [`super::tools::filter`]: tool lists show only what the sandbox may call, and
//! tools that changed are taken out.
//!
//! A JSON answer or event cordon cannot read where a tool list could be is not passed on: the answer ends with an
//! error. SSE comments (keep-alives) are not carried over (the parser drops them).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt};
use http::HeaderMap;
use http::header::CONTENT_TYPE;
use http_body::Frame;
use http_body_util::{BodyDataStream, BodyExt, StreamBody};
use serde_json::Value;

use super::tools::{Filtered, Pinned, filter};
use crate::body::{BoxError, ProxyBody};
use crate::policy::mcp::McpRules;

/// The largest JSON answer read.
pub(crate) const MOST_JSON: usize = 8 * 1024 * 1024;
/// The most bytes of one event (or of what comes before the first).
pub(crate) const MOST_EVENT: usize = 8 * 1024 * 1024;

/// What the answers of one endpoint are filtered with.
#[derive(Clone)]
pub(crate) struct Lists {
    pub(crate) rules: Arc<McpRules>,
    pub(crate) pinned: Arc<Mutex<Pinned>>,
    /// For the log line of a changed tool: the sandbox and the endpoint.
    pub(crate) whose: Arc<str>,
}

impl Lists {
    /// Filter one JSON value: a message, or a batch of them.
    fn filter(&self, value: &mut Value) -> bool {
        let mut done = Vec::new();
        match value {
            Value::Array(messages) => {
                for m in messages {
                    done.extend(filter(&self.rules, &self.pinned, m));
                }
            }
            message => done.extend(filter(&self.rules, &self.pinned, message)),
        }
        for Filtered { changed, .. } in &done {
            for tool in changed {
                tracing::warn!(whose = %self.whose, tool, "an MCP tool changed what it says it does since this sandbox first saw it; it is hidden and its calls refused (mcp_tool_changed)");
            }
        }
        !done.is_empty()
    }

    /// The bytes of `text` as the sandbox gets them: the same bytes when nothing was filtered.
    fn filtered(&self, text: &[u8]) -> Result<Option<Vec<u8>>, String> {
        // An empty answer (a 202 to a notification, whatever its Content-Type says) has nothing to filter.
        if text.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        let mut value: Value =
            serde_json::from_slice(text).map_err(|e| format!("an MCP answer that is not JSON: {e}"))?;
        if self.filter(&mut value) {
            return serde_json::to_vec(&value).map(Some).map_err(|e| e.to_string());
        }
        Ok(None)
    }
}

/// Whether the answer says it is JSON, or an event stream, by its Content-Type.
fn declared(headers: &HeaderMap, essence: &str) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|ct| ct.to_str().ok())
        .and_then(|ct| ct.split(';').next())
        .is_some_and(|e| e.trim().eq_ignore_ascii_case(essence))
}

/// `body` as the sandbox gets it: an event stream filtered event by event; anything else read whole as JSON
/// (a tool list is filtered whatever Content-Type the server gave it, or none). An answer that says it is JSON
/// and is not ends with an error; one that says nothing of the kind and is not JSON goes on as it came.
pub(crate) fn answer(headers: &HeaderMap, body: ProxyBody, lists: Lists) -> ProxyBody {
    if declared(headers, "text/event-stream") {
        sse(body, lists)
    } else {
        json(body, lists, declared(headers, "application/json"))
    }
}

fn json(body: ProxyBody, lists: Lists, declared: bool) -> ProxyBody {
    let whole = async move {
        let read = crate::body::read::read(body, MOST_JSON)
            .await
            .map_err(|e| -> BoxError { e.to_string().into() })?;
        let data = match read {
            crate::body::read::Read::Whole(data, _) => data,
            crate::body::read::Read::TooLarge => {
                return Err::<Frame<Bytes>, BoxError>(format!("an MCP answer over {MOST_JSON} bytes").into());
            }
        };
        match lists.filtered(&data) {
            Ok(Some(filtered)) => Ok(Frame::data(Bytes::from(filtered))),
            Ok(None) => Ok(Frame::data(data)),
            Err(e) if declared => Err(e.into()),
            // Not JSON, and not said to be: no tool list a client could read is in it.
            Err(_) => Ok(Frame::data(data)),
        }
    };
    StreamBody::new(futures_util::stream::once(whole)).boxed_unsync()
}

/// An error ending an event stream.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct StreamError(String);

fn sse(body: ProxyBody, lists: Lists) -> ProxyBody {
    // SECURITY: what the parser holds between events is bounded: a stream that never ends an event is cut.
    let pending = Arc::new(AtomicUsize::new(0));
    let counted = pending.clone();
    let bytes = BodyDataStream::new(body).map(move |chunk| {
        let chunk = chunk.map_err(|e| StreamError(e.to_string()))?;
        if counted.fetch_add(chunk.len(), Ordering::Relaxed) + chunk.len() > MOST_EVENT {
            return Err(StreamError(format!("an MCP event over {MOST_EVENT} bytes")));
        }
        Ok(chunk)
    });
    let events = sse_stream::SseStream::from_bytes_stream(bytes).map(move |event| {
        let event = event.map_err(|e| -> BoxError { format!("an MCP event stream cordon cannot read: {e}").into() })?;
        pending.store(0, Ordering::Relaxed);
        // Only messages carry JSON-RPC (the older transport's `endpoint` event carries a URL).
        let message = event.event.as_deref().is_none_or(|name| name == "message");
        let data = match &event.data {
            Some(data) if message => match lists.filtered(data.as_bytes()) {
                Ok(Some(filtered)) => Some(String::from_utf8_lossy(&filtered).into_owned()),
                Ok(None) => None,
                Err(e) => return Err(e.into()),
            },
            _ => None,
        };
        Ok(Frame::data(encode(&event, data.as_deref())))
    });
    StreamBody::new(events.into_stream()).boxed_unsync()
}

/// One event written again: `data` instead of the event's own when given; every line of data its own `data:`.
fn encode(event: &sse_stream::Sse, data: Option<&str>) -> Bytes {
    let mut out = String::new();
    if let Some(name) = &event.event {
        out.push_str(&format!("event: {name}\n"));
    }
    if let Some(id) = &event.id {
        out.push_str(&format!("id: {id}\n"));
    }
    if let Some(retry) = event.retry {
        out.push_str(&format!("retry: {retry}\n"));
    }
    if let Some(data) = data.or(event.data.as_deref()) {
        for line in data.split('\n') {
            out.push_str(&format!("data: {line}\n"));
        }
    }
    out.push('\n');
    Bytes::from(out)
}

#[cfg(test)]
#[path = "answer_tests.rs"]
mod tests;
