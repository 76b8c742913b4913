//! The answers an MCP endpoint sends back, on their way to the sandbox. Wherever a tool list could be, cordon
//! reads the answer with certainty or does not pass it on:
//!
//! - an answer whose one `Content-Type` is exactly `text/event-stream` (in any case, with at most a `charset` of
//!   UTF-8) is read event by event and each event's data filtered as it comes, never buffered whole (one event at
//!   most [`MOST_EVENT`]);
//! - any other answer, whatever its media type says (`application/json`, none, `text/event-stream,
//!   application/json`, `text/plain; profile=text/event-stream`, ...), is read whole (at most [`MOST_JSON`]) and
//!   must be empty or one JSON text with no member written twice in any object; each message in it is filtered.
//!
//! What cannot be read so is [`Unreadable`]: the pipeline refuses the answer (a 2xx) or puts its own short text
//! in place of the body (an error or a redirect, whose status and headers a client still needs). The filter is
//! [`super::tools::filter`]: tool lists show only what the sandbox may call, and tools that changed are taken out.
//! What is held of unfinished answers is bounded per sandbox and in all ([`super::held`]). SSE comments
//! (keep-alives) are not carried over (the parser drops them).

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt};
use http::HeaderMap;
use http::header::CONTENT_TYPE;
use http_body::Frame;
use http_body_util::{BodyDataStream, BodyExt, StreamBody};
use serde_json::Value;

use super::held::{Held, Share};
use super::sessions::McpSessions;
use super::tools::{FilteredTools, Pinned, filter};
use crate::body::{BoxError, ProxyBody};
use crate::locks::Unpoisoned;
use crate::policy::mcp::McpRules;

/// The largest JSON answer read.
pub(crate) const MOST_JSON: usize = 8 * 1024 * 1024;
/// The most bytes of one event (or of what comes before the first).
pub(crate) const MOST_EVENT: usize = 8 * 1024 * 1024;

/// What the answers of one server are filtered with.
#[derive(Clone)]
pub(crate) struct Lists {
    pub(crate) rules: Arc<McpRules>,
    pub(crate) pinned: Arc<Mutex<Pinned>>,
    /// For the log line of a changed tool: the sandbox and the server.
    pub(crate) whose: Arc<str>,
    /// What unfinished answers hold, and the sandbox (incarnation) this one counts for.
    pub(crate) held: Arc<Held>,
    pub(crate) sandbox: crate::names::Incarnation,
    /// Where the session ids of the older transport's `endpoint` events are bound, and the server's origin.
    pub(crate) sessions: Option<(Arc<McpSessions>, Arc<str>)>,
}

/// An answer cordon cannot read with certainty where a tool list could be, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Unreadable(pub(crate) String);

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
        for FilteredTools { changed, .. } in &done {
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
        // SECURITY: a member written twice (`"result"` twice, one with the tool list cordon filters and one a
        // client that keeps the first reads) is read differently by different parsers: not passed on.
        crate::body::json::unique_members(text).map_err(|e| format!("an MCP answer that is not JSON: {e}"))?;
        let mut value: Value =
            serde_json::from_slice(text).map_err(|e| format!("an MCP answer that is not JSON: {e}"))?;
        if self.filter(&mut value) {
            return serde_json::to_vec(&value).map(Some).map_err(|e| e.to_string());
        }
        Ok(None)
    }
}

/// Whether the answer is an event stream beyond doubt: one `Content-Type`, `text/event-stream` in any case,
/// with no parameter but `charset=utf-8`.
fn event_stream(headers: &HeaderMap) -> bool {
    let mut types = headers.get_all(CONTENT_TYPE).iter();
    let (Some(only), None) = (types.next(), types.next()) else {
        return false;
    };
    let Ok(text) = only.to_str() else {
        return false;
    };
    let mut parts = text.split(';');
    let essence = parts.next().unwrap_or_default().trim();
    essence.eq_ignore_ascii_case("text/event-stream")
        && parts.all(|p| {
            p.split_once('=').is_some_and(|(name, value)| {
                name.trim().eq_ignore_ascii_case("charset")
                    && value.trim().trim_matches('"').eq_ignore_ascii_case("utf-8")
            })
        })
}

/// `body` as the sandbox gets it: an event stream (beyond doubt, see [`event_stream`]) filtered event by event
/// as it comes; anything else read whole here, and filtered, or [`Unreadable`].
pub(crate) async fn answer(headers: &HeaderMap, body: ProxyBody, lists: Lists) -> Result<ProxyBody, Unreadable> {
    if event_stream(headers) {
        return Ok(sse(body, lists));
    }
    let mut share = Share::new(lists.held.clone(), lists.sandbox.clone());
    let mut data = Vec::new();
    let mut stream = BodyDataStream::new(body);
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| Unreadable(format!("the MCP answer could not be read: {e}")))?;
        // SECURITY: what is held while the answer is not yet whole is bounded, per answer, sandbox and in all.
        share
            .grow(chunk.len(), MOST_JSON, "an MCP answer")
            .map_err(Unreadable)?;
        data.extend_from_slice(&chunk);
    }
    let filtered = lists.filtered(&data).map_err(Unreadable)?;
    Ok(crate::body::full(filtered.unwrap_or(data)))
}

/// An error ending an event stream.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct StreamError(String);

fn sse(body: ProxyBody, lists: Lists) -> ProxyBody {
    // SECURITY: what the parser holds between events is bounded (per event, per sandbox and in all): a stream
    // that never ends an event is cut.
    let share = Arc::new(Mutex::new(Share::new(lists.held.clone(), lists.sandbox.clone())));
    let (counted, whose) = (share.clone(), lists.whose.clone());
    let bytes = BodyDataStream::new(body).map(move |chunk| {
        let chunk = chunk.map_err(|e| StreamError(e.to_string()))?;
        counted
            .lock()
            .unpoisoned()
            .grow(chunk.len(), MOST_EVENT, "an MCP event")
            .map_err(|e| {
                tracing::warn!(%whose, "an MCP event stream was cut (mcp_answer_unreadable): {e}");
                StreamError(e)
            })?;
        Ok::<_, StreamError>(chunk)
    });
    let events = sse_stream::SseStream::from_bytes_stream(bytes).map(move |event| {
        let event = event.map_err(|e| -> BoxError { format!("an MCP event stream cordon cannot read: {e}").into() })?;
        share.lock().unpoisoned().release();
        // SECURITY: any event whose data is JSON is filtered, whatever its name (a client might read a message
        // under another name); one named as a message (or not named) must be JSON. Only another event's data
        // that is not JSON (the older transport's `endpoint` event, a URL) goes on as it came.
        let message = event.event.as_deref().is_none_or(|name| name == "message");
        // SECURITY: the older transport's session id (in the query of the URL its `endpoint` event gives) is the
        // sandbox's, as an Mcp-Session-Id is; a server that hands one sandbox another's session is cut off.
        if let (Some("endpoint"), Some(data), Some((sessions, origin))) =
            (event.event.as_deref(), &event.data, &lists.sessions)
        {
            for id in super::sessions::ids_in_endpoint(data) {
                if sessions.bind(origin, &id, &lists.sandbox).is_err() {
                    return Err(format!(
                        "an MCP endpoint event whose session is another sandbox's (mcp_session_foreign), or past the \
                         sandbox's {} sessions",
                        super::sessions::MOST_PER_SANDBOX
                    )
                    .into());
                }
            }
        }
        let data = match &event.data {
            Some(data) => match lists.filtered(data.as_bytes()) {
                Ok(Some(filtered)) => Some(String::from_utf8_lossy(&filtered).into_owned()),
                Ok(None) => None,
                Err(e) if message => return Err(e.into()),
                Err(_) => None,
            },
            None => None,
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
