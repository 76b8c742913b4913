//! The protocol step: what an MCP or GraphQL endpoint's rule says about the messages a request carries, and
//! the filtering of their answers.

pub(super) mod graphql;
pub(super) mod mcp;
pub(super) mod mcp_answer;
