//! The protocol step: what an endpoint's rule says about the messages of the protocol it speaks (MCP, GraphQL),
//! and the checking of their answers. Each protocol is one [`Protocol`](contract::Protocol): it reads the request, judges it
//! against its section of the rule, refuses in its own words, shows a person what it asks, and checks the
//! answer; the protocol phase (`proxy::phase::protocol`) runs the one the rule names and acts on what it found, the same way for every
//! protocol. A protocol is added with its module here and one line in [`PROTOCOLS`] (docs/src/development.md).
//!
//! The shapes a protocol deals in (the verdict, what is asked, a refusal, its section of the audit record) are
//! `crate::policy::protocol`'s, below the error and the audit record that carry them.

pub(crate) mod contract;
mod graphql;
mod mcp;
mod model_api;
pub(crate) mod read;

use contract::Protocol;

/// The protocols cordon judges inside a request, one line each. A rule names at most one (the configuration
/// refuses a rule with two sections); the phase runs the first that governs the rule.
pub(crate) const PROTOCOLS: &[&dyn Protocol] = &[&mcp::Mcp, &graphql::Graphql, &model_api::ModelApi];

#[cfg(test)]
#[path = "toy_tests.rs"]
mod toy_tests;
