//! The server's side: the tool lists a sandbox is shown. A list is filtered to the tools the rule lets the
//! sandbox call (perhaps after asking), and each tool is pinned the first time the sandbox sees it: its name and
//! a digest of what it says it does (title, description, input and output schemas, annotations). A tool that
//! later says something else is taken out of every list and its calls are refused (`mcp_tool_changed`), so a
//! server cannot swap a tool's meaning under a session. Pins are kept per sandbox incarnation and endpoint
//! (host, port, path), in this replica's memory, for a day after last use.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::policy::mcp::McpRules;

/// The most tools pinned per endpoint; tools past it are not shown.
const MOST_TOOLS: usize = 4096;

/// A sandbox's endpoint: incarnation, host, port, path.
pub(crate) type Endpoint = (String, String, u16, String);

/// Every endpoint's pins.
pub(crate) struct Pins {
    cache: moka::sync::Cache<Endpoint, Arc<Mutex<Pinned>>>,
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
    /// The pins of `endpoint`, made empty on first use.
    pub(crate) fn of(&self, endpoint: Endpoint) -> Arc<Mutex<Pinned>> {
        self.cache
            .get_with(endpoint, || Arc::new(Mutex::new(Pinned::default())))
    }
}

/// One endpoint's pinned tools, and those that changed.
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

/// What a tool says it does, digested (object members in sorted order, so the same tool digests the same).
fn digest(tool: &serde_json::Map<String, Value>) -> String {
    let said: Vec<Option<&Value>> = ["title", "description", "inputSchema", "outputSchema", "annotations"]
        .iter()
        .map(|k| tool.get(*k))
        .collect();
    let text = serde_json::to_string(&said).unwrap_or_default();
    hex::encode(ring::digest::digest(&ring::digest::SHA256, text.as_bytes()))
}

/// What the list filter did to one message.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Filtered {
    /// Tools taken out because the rule does not let the sandbox call them.
    pub(crate) hidden: Vec<String>,
    /// Tools taken out because they changed since pinned.
    pub(crate) changed: Vec<String>,
}

/// Filter `message` if it answers a tool list (a result with a `tools` array), pinning what is shown; `None` if it
/// is something else or nothing was taken out (it then goes on as it came).
pub(crate) fn filter(rules: &McpRules, pinned: &Mutex<Pinned>, message: &mut Value) -> Option<Filtered> {
    let tools = message.get_mut("result")?.get_mut("tools")?.as_array_mut()?;
    let mut out = Filtered::default();
    let mut pins = pinned.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    tools.retain(|tool| {
        // SECURITY: a tool with no name, or one that is not a string, cannot be judged: it is not shown.
        let (Some(obj), Some(name)) = (tool.as_object(), tool.get("name").and_then(Value::as_str)) else {
            out.hidden.push(String::new());
            return false;
        };
        if !rules.tool(name).listed() {
            out.hidden.push(name.to_owned());
            return false;
        }
        if !pins.see(name, digest(obj)) {
            out.changed.push(name.to_owned());
            return false;
        }
        true
    });
    (out != Filtered::default()).then_some(out)
}

#[cfg(test)]
#[path = "tools_tests.rs"]
mod tests;
