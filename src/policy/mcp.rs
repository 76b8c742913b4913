//! A rule's `mcp:` section: which tools of a Model Context Protocol endpoint its sandboxes may call
//! (`tools`), which wait for a person (`ask`), which are refused whatever else says (`deny`), and which JSON-RPC
//! methods beyond the protocol's own lifecycle may be sent (`methods`). Decided purely, like the rest of a
//! policy; reading the messages is `crate::mcp`'s.
//!
//! Names are tool names or globs (`*` any run of characters, `?` one). `deny` and `ask` match in any case (a
//! broader refusal is the safe side: a server that looked names up without case would otherwise run `Delete_repo`
//! past `deny: [delete_*]`); `tools` and `methods` match exactly, as servers look them up.
//!
//! A name that comes over the wire is judged only if it is one MCP allows (ASCII letters, digits, `_ - . /`):
//! anything else (`\u{212a}ill_all`, whose KELVIN SIGN a server's Unicode case folding makes `kill_all`; `\u{17f}`,
//! fullwidth forms, a dotless i, a zero-width space) is refused, so no folding or normalization a server applies
//! can turn a name the globs did not match into one they deny.

use super::globs::{Alphabet, Names};

/// Methods every MCP client sends to set up, keep and list a session: allowed without being named, so a rule
/// that lists tools works with real clients. What they answer is judged on the way back (a tool list is
/// filtered); none of them acts on the world.
pub(crate) const LIFECYCLE: &[&str] = &[
    "initialize",
    "ping",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
];

/// The method that calls a tool, judged by name against the rule.
pub(crate) const CALL: &str = "tools/call";

/// A name as MCP allows it (1 to 128 of `A-Z a-z 0-9 _ - . /`), or a glob of such names.
const MCP_NAME: Alphabet = Alphabet {
    punctuation: "_-./",
    says: "letters, digits, '_', '-', '.' and '/'",
};

/// Whether `name` (a tool or method as sent) is a name as MCP writes them: 1 to 128 of ASCII letters, digits,
/// `_`, `-`, `.` and `/`.
pub(crate) fn well_formed(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || MCP_NAME.punctuation.as_bytes().contains(&b))
}

/// What a rule says about one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolVerdict {
    /// Called at once.
    Allow,
    /// Held for a person.
    Ask,
    /// Named under `deny`.
    Deny,
    /// Named nowhere: refused (default deny).
    Unnamed,
    /// Not a name MCP allows (not 1 to 128 ASCII letters, digits, `_ - . /`): refused whatever the rule says.
    Malformed,
}

impl ToolVerdict {
    /// Whether the sandbox may see the tool in a list: it may call it, perhaps after asking.
    pub(crate) fn listed(self) -> bool {
        matches!(self, ToolVerdict::Allow | ToolVerdict::Ask)
    }
}

/// A validated `mcp:` section.
#[derive(Debug, Clone)]
pub struct McpRules {
    pub(crate) tools: Names,
    pub(crate) ask: Names,
    pub(crate) deny: Names,
    pub(crate) methods: Names,
}

impl McpRules {
    /// Compile what was written; the error names the list (`tools`, `ask`, `deny`, `methods`), the entry and
    /// what is wrong.
    pub(crate) fn new(
        tools: Vec<String>,
        ask: Vec<String>,
        deny: Vec<String>,
        methods: Vec<String>,
    ) -> Result<McpRules, (&'static str, usize, String)> {
        let tools = Names::new(tools, false, "tool name", &MCP_NAME).map_err(|(i, e)| ("tools", i, e))?;
        let ask = Names::new(ask, true, "tool name", &MCP_NAME).map_err(|(i, e)| ("ask", i, e))?;
        let deny = Names::new(deny, true, "tool name", &MCP_NAME).map_err(|(i, e)| ("deny", i, e))?;
        let methods = Names::new(methods, false, "method", &MCP_NAME).map_err(|(i, e)| ("methods", i, e))?;
        if let Some(i) = methods.texts.iter().position(|m| m == CALL) {
            return Err((
                "methods",
                i,
                format!(
                    "{:?}: tools/call is judged by tool name; list the tools under `tools` or `ask`",
                    methods.texts[i]
                ),
            ));
        }
        Ok(McpRules {
            tools,
            ask,
            deny,
            methods,
        })
    }

    /// What the rule says about calling `tool`: a name MCP does not allow is refused; then `deny`, then `ask`,
    /// then `tools`; else refused.
    pub(crate) fn tool(&self, tool: &str) -> ToolVerdict {
        // SECURITY: Unicode case folding or normalization on the server (KELVIN SIGN -> k, LONG S -> s) would
        // turn a name no `deny` glob matches here into one it denies: only MCP's ASCII names are judged.
        if !well_formed(tool) {
            ToolVerdict::Malformed
        } else if self.deny.matches(tool) {
            ToolVerdict::Deny
        } else if self.ask.matches(tool) {
            ToolVerdict::Ask
        } else if self.tools.matches(tool) {
            ToolVerdict::Allow
        } else {
            ToolVerdict::Unnamed
        }
    }

    /// Whether a message of `method` (not `tools/call`, which [`McpRules::tool`] judges) may be sent: a lifecycle
    /// method or one `methods` names, written as MCP writes names, and no other spelling of `tools/call`.
    pub(crate) fn method(&self, method: &str) -> bool {
        // SECURITY: `Tools/Call` under `methods: ["tools/*"]` would be a tool call judged as a method by a server
        // that folds case.
        if !well_formed(method) || method.eq_ignore_ascii_case(CALL) {
            return false;
        }
        LIFECYCLE.contains(&method) || self.methods.matches(method)
    }

    /// Everything the section says, for a rule's fingerprint.
    pub(crate) fn said(&self) -> String {
        format!(
            "tools={:?} ask={:?} deny={:?} methods={:?}",
            self.tools.texts, self.ask.texts, self.deny.texts, self.methods.texts
        )
    }

    /// Whether `self` (a sandbox's own rule) only narrows `base` (the rule of the policy it extends): every tool it
    /// lets through at once `base` lets through at once, every tool it asks for `base` allows or asks for, and
    /// every method it allows `base` allows. Checked conservatively by the lists' entries: its `tools` inside
    /// `base.tools`, its `ask` inside `base.tools` or `base.ask`, `base.deny` among its `deny`, `base.ask` among
    /// its `ask` or `deny`, its `methods` inside `base.methods`. The field and why, when it does not.
    pub(crate) fn within(&self, base: &McpRules) -> Result<(), (&'static str, String)> {
        if let Some(i) = self.tools.within(&base.tools) {
            return Err((
                "tools",
                format!(
                    "{:?} is not a tool the base lets through at once (its tools: {:?})",
                    self.tools.texts[i], base.tools.texts
                ),
            ));
        }
        if let Some(i) = self
            .ask
            .texts
            .iter()
            // SECURITY: `ask` matches in any case and `tools` exactly: an own `ask: [b]` over a base's `tools: [b]`
            // would ask for (and a person could let through) `B`, which the base refuses.
            .position(|t| !(base.ask.holds(t) || base.tools.holds_every_case(t)))
        {
            let t = &self.ask.texts[i];
            return Err((
                "ask",
                if base.tools.holds(t) {
                    format!(
                        "{t:?} matches in any case under `ask`, but the base lets through only {t:?} as written (its \
                         tools match exactly): ask for it in the base, or leave it to the base's tools"
                    )
                } else {
                    format!("{t:?} is not a tool the base allows or asks for")
                },
            ));
        }
        if let Some(missing) = self.deny.covers(&base.deny) {
            return Err((
                "deny",
                format!("the base denies {missing:?}; an own rule must deny it too"),
            ));
        }
        if let Some(missing) = base
            .ask
            .texts
            .iter()
            .find(|t| !(self.ask.texts.contains(t) || self.deny.texts.contains(t)))
        {
            return Err((
                "ask",
                format!("the base asks before {missing:?}; an own rule must ask before it or deny it"),
            ));
        }
        if let Some(i) = self.methods.within(&base.methods) {
            return Err((
                "methods",
                format!("{:?} is not a method the base allows", self.methods.texts[i]),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "mcp_tests.rs"]
mod tests;
