//! End to end with the tools agents run: each case starts a local HTTPS server, a cordon with an admin API
//! and a run-time sandbox, and runs the real client with nothing but the sandbox's environment.

mod bundle;
mod cargo_registry;
pub(crate) mod git;
mod graphql;
pub(crate) mod harness;
mod http_clients;
pub(crate) mod llm;
mod mcp;
mod mcp_hostile;
mod mcp_memory;
mod mcp_wire;
mod npm;
mod per_task;
pub(crate) mod pip;
