//! MCP sessions (`Mcp-Session-Id`), each bound to the sandbox that first showed it to cordon: in the server's
//! answer that made it, or in a request that used it. Another sandbox that sends it is refused
//! (`mcp_session_foreign`): a session id one sandbox learned (from a log, a shared file, a guess) does not let it
//! act in another's session, whose tools, grants and pins are the other's. Kept per server origin, in this
//! replica's memory, until the session's own sandbox ends it (a DELETE the server accepts) or for a day after last
//! use; at most [`MOST_PER_SANDBOX`] per sandbox, so no sandbox can crowd out another's bindings.
//!
//! The older HTTP+SSE transport names its session in the query of the URL its `endpoint` event gives
//! (`/messages/?session_id=...`): each query value there of 16 characters or more is bound as a session id the
//! same way, and a request whose query carries one bound to another sandbox is refused.

use crate::locks::Unpoisoned;
use crate::names::Incarnation;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a binding lasts after its last use.
const IDLE: Duration = Duration::from_secs(24 * 3600);
/// The most sessions bound to one sandbox at once.
pub(crate) const MOST_PER_SANDBOX: usize = 1024;
/// The longest session id taken.
const LONGEST: usize = 1024;
/// How often idle bindings are swept away.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// Why a session id may not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Not a session id as MCP writes them (visible ASCII, 0x21 to 0x7E), or too long.
    Malformed(String),
    /// Bound to another sandbox.
    Foreign,
    /// The sandbox holds [`MOST_PER_SANDBOX`] sessions already.
    TooMany,
}

/// Every session's binding.
#[derive(Debug)]
pub(crate) struct McpSessions {
    inner: Mutex<SessionTable>,
}

#[derive(Debug)]
struct SessionTable {
    /// (server origin, session id) -> (sandbox incarnation, last use).
    bound: HashMap<(String, String), (Incarnation, Instant)>,
    /// Sessions per sandbox incarnation.
    counts: HashMap<Incarnation, usize>,
    swept: Instant,
}

impl Default for McpSessions {
    fn default() -> Self {
        McpSessions {
            inner: Mutex::new(SessionTable {
                bound: HashMap::new(),
                counts: HashMap::new(),
                swept: Instant::now(),
            }),
        }
    }
}

/// Whether `id` is a session id as MCP writes them.
fn check(id: &str) -> Result<(), Refusal> {
    if id.is_empty() || id.len() > LONGEST || !id.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        return Err(Refusal::Malformed(format!(
            "an Mcp-Session-Id of 1 to {LONGEST} visible ASCII characters (0x21 to 0x7E)"
        )));
    }
    Ok(())
}

impl McpSessions {
    /// Bind the session `id` of the server at `origin` to the sandbox `incarnation`, unless it is another's.
    pub(crate) fn bind(&self, origin: &str, id: &str, incarnation: &Incarnation) -> Result<(), Refusal> {
        check(id)?;
        let now = Instant::now();
        let mut inner = self.inner.lock().unpoisoned();
        if now.duration_since(inner.swept) >= SWEEP_EVERY {
            inner.sweep(now);
        }
        let key = (origin.to_owned(), id.to_owned());
        if let Some((whose, last)) = inner.bound.get_mut(&key) {
            if *whose != *incarnation {
                return Err(Refusal::Foreign);
            }
            *last = now;
            return Ok(());
        }
        let count = inner.counts.get(incarnation).copied().unwrap_or(0);
        if count >= MOST_PER_SANDBOX {
            return Err(Refusal::TooMany);
        }
        inner.counts.insert(incarnation.clone(), count + 1);
        inner.bound.insert(key, (incarnation.clone(), now));
        Ok(())
    }
}

impl McpSessions {
    /// Whether the session `id` of the server at `origin` is bound to another sandbox than `incarnation`.
    pub(crate) fn foreign(&self, origin: &str, id: &str, incarnation: &Incarnation) -> bool {
        let inner = self.inner.lock().unpoisoned();
        inner
            .bound
            .get(&(origin.to_owned(), id.to_owned()))
            .is_some_and(|(whose, _)| whose != incarnation)
    }

    /// The session `id` of the server at `origin` ended (its sandbox's DELETE was accepted): its binding goes.
    pub(crate) fn end(&self, origin: &str, id: &str, incarnation: &Incarnation) {
        let mut inner = self.inner.lock().unpoisoned();
        let key = (origin.to_owned(), id.to_owned());
        if inner.bound.get(&key).is_some_and(|(whose, _)| whose == incarnation) {
            inner.bound.remove(&key);
            if let Some(n) = inner.counts.get_mut(incarnation) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    inner.counts.remove(incarnation);
                }
            }
        }
    }
}

/// The shortest query value taken for a session id of the older HTTP+SSE transport (`?session_id=` in the
/// Python SDK, `?sessionId=` in the TypeScript SDK): a UUID's hex is 32.
const SHORTEST_IN_QUERY: usize = 16;

/// The session ids in a URL's query, as the older HTTP+SSE transport writes them: every value (decoded) of at
/// least [`SHORTEST_IN_QUERY`] visible ASCII characters, whatever its name.
pub(crate) fn ids_in_query(query: &str) -> Vec<String> {
    form_urlencoded::parse(query.as_bytes())
        .map(|(_, value)| value.into_owned())
        .filter(|value| value.len() >= SHORTEST_IN_QUERY && check(value).is_ok())
        .collect()
}

/// The session ids in the URL an `endpoint` event of the older transport gives (relative or absolute).
pub(crate) fn ids_in_endpoint(data: &str) -> Vec<String> {
    url::Url::parse("https://endpoint.invalid/")
        .and_then(|base| base.join(data.trim()))
        .ok()
        .and_then(|url| url.query().map(ids_in_query))
        .unwrap_or_default()
}

impl SessionTable {
    /// Drop the bindings idle for longer than [`IDLE`].
    fn sweep(&mut self, now: Instant) {
        self.swept = now;
        let counts = &mut self.counts;
        self.bound.retain(|_, (whose, last)| {
            let keep = now.duration_since(*last) < IDLE;
            if !keep && let Some(n) = counts.get_mut(whose.as_str()) {
                *n = n.saturating_sub(1);
            }
            keep
        });
        self.counts.retain(|_, n| *n > 0);
    }
}

#[cfg(test)]
#[path = "sessions_tests.rs"]
mod tests;
