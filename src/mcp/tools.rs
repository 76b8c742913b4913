//! The server's side: the tool lists a sandbox is shown. A list is filtered to the tools the rule lets the
//! sandbox call (perhaps after asking), and each tool is pinned the first time the sandbox sees it: its name and
//! a digest of the whole tool object as the server wrote it (every member: title, description, input and output
//! schemas, annotations, `_meta`, `icons`, and any member a later protocol version adds, since a client may show
//! any of them to its model), its members sorted so the same tool digests the same. A tool that later says
//! something else is taken out of every list and its calls are refused (`mcp_tool_changed`), so a server cannot
//! swap a tool's meaning under a session.
//!
//! Pins are kept per sandbox incarnation and server, and a server is its origin (scheme, host, port), never the
//! path: a tool list answered at `/mcp/v2` (to which a server redirected `/mcp`), `/mcp/`, `/MCP` or
//! `/%6dcp` is compared against the pins the sandbox has for every other path of that origin.

use crate::names::Incarnation;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::policy::mcp::McpRules;

/// The most tools pinned per server; tools past it are not shown.
const MOST_TOOLS: usize = 4096;

/// The MCP server as one sandbox meets it: the sandbox's incarnation and the server's origin
/// (`https://host:port`). Whatever path a request or a redirect names, the same origin is the same server.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Server {
    /// The sandbox incarnation (`crate::identity::Sandbox::incarnation`).
    pub(crate) incarnation: Incarnation,
    /// `scheme://host:port`, normalised (lowercase host, port always written).
    pub(crate) origin: String,
}

/// Every server's pins.
pub(crate) struct Pins {
    cache: moka::sync::Cache<Server, Arc<Mutex<Pinned>>>,
}

impl Default for Pins {
    fn default() -> Self {
        Pins {
            cache: moka::sync::Cache::builder()
                .max_capacity(100_000)
                .time_to_idle(Duration::from_secs(24 * 3600))
                .build(),
        }
    }
}

impl Pins {
    /// The pins of `server`, made empty on first use.
    pub(crate) fn of(&self, server: Server) -> Arc<Mutex<Pinned>> {
        self.cache.get_with(server, || Arc::new(Mutex::new(Pinned::default())))
    }
}

/// One server's pinned tools, and those that changed.
#[derive(Debug, Default)]
pub(crate) struct Pinned {
    digests: HashMap<String, String>,
    changed: HashSet<String>,
}

impl Pinned {
    /// Whether `tool` changed since it was pinned.
    pub(crate) fn changed(&self, tool: &str) -> bool {
        self.changed.contains(tool)
    }

    /// Pin `tool` with `digest` on first sight; false if it was pinned with another digest (it is then changed
    /// for good) or there is no room left.
    fn see(&mut self, tool: &str, digest: String) -> bool {
        if self.changed.contains(tool) {
            return false;
        }
        match self.digests.get(tool) {
            Some(pinned) if *pinned == digest => true,
            Some(_) => {
                self.changed.insert(tool.to_owned());
                false
            }
            None if self.digests.len() < MOST_TOOLS => {
                self.digests.insert(tool.to_owned(), digest);
                true
            }
            None => false,
        }
    }
}

/// What a tool says, digested: the whole object, written canonically.
fn digest(tool: &Value) -> String {
    let mut text = String::new();
    canonical(tool, &mut text);
    hex::encode(ring::digest::digest(&ring::digest::SHA256, text.as_bytes()))
}

/// `value` as JSON with every object's members sorted by name at every depth, so member order (which a server
/// may vary, and which serde_json keeps when a dependency turns on its `preserve_order`) makes no change.
/// Strings and numbers are written as serde_json writes them.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(members) => {
            let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (name, member)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(name.clone()).to_string());
                out.push(':');
                canonical(member, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// What the list filter did to one message.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct FilteredTools {
    /// Tools taken out because the rule does not let the sandbox call them.
    pub(crate) hidden: Vec<String>,
    /// Tools taken out because they changed since pinned.
    pub(crate) changed: Vec<String>,
}

/// Filter `message` if it answers a tool list (a result with a `tools` array), pinning what is shown; `None` if it
/// is something else or nothing was taken out (it then goes on as it came).
pub(crate) fn filter(rules: &McpRules, pinned: &Mutex<Pinned>, message: &mut Value) -> Option<FilteredTools> {
    let tools = message.get_mut("result")?.get_mut("tools")?.as_array_mut()?;
    let mut out = FilteredTools::default();
    let mut pins = pinned.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    tools.retain(|tool| {
        // SECURITY: a tool with no name, or one that is not a string, cannot be judged: it is not shown.
        let (true, Some(name)) = (tool.is_object(), tool.get("name").and_then(Value::as_str)) else {
            out.hidden.push(String::new());
            return false;
        };
        if !rules.tool(name).listed() {
            out.hidden.push(name.to_owned());
            return false;
        }
        // SECURITY: every member is pinned (`_meta`, `icons` too): a client may show any of them to its model.
        if !pins.see(name, digest(tool)) {
            out.changed.push(name.to_owned());
            return false;
        }
        true
    });
    (out != FilteredTools::default()).then_some(out)
}

#[cfg(test)]
#[path = "tools_tests.rs"]
mod tests;
