//! The Model Context Protocol, as cordon judges it on an endpoint whose rule has an `mcp:` section (MCP's
//! streamable HTTP: JSON-RPC 2.0 messages POSTed, answered with JSON or a server-sent event stream; a GET opens a
//! stream of the server's messages; a DELETE ends the session).
//!
//! - [`message`] reads the messages of a POST strictly (one, or a batch);
//! - [`judge`] decides them against the rule (`crate::policy::mcp`): lifecycle passes, each `tools/call` is
//!   allowed, held for a person, or refused with a JSON-RPC error, and a batch goes whole or not at all;
//! - [`tools`] filters the tool lists the sandbox is shown and pins what each tool said, per sandbox and server
//!   origin;
//! - [`answer`] applies that filter to JSON answers and to event streams as they come, and refuses what it cannot
//!   read with certainty; [`held`] bounds what unfinished answers hold;
//! - [`sessions`] binds each `Mcp-Session-Id` to the sandbox that first showed it.
//!
//! The pipeline's MCP step (`crate::proxy`) reads the body, hands it here, and acts on the verdict.

pub(crate) mod answer;
pub(crate) mod held;
pub(crate) mod judge;
pub(crate) mod message;
pub(crate) mod sessions;
pub(crate) mod tools;
