//! The protocol sections of a rule (`mcp:`, `graphql:`) as a configuration file writes them: every wrong entry
//! named by its path, nothing half-applied.

use crate::config::Config;

fn errors(yaml: &str) -> Vec<String> {
    match Config::parse("t.yaml", yaml) {
        Ok(_) => vec![],
        Err(e) => e.0.iter().map(|e| e.to_string()).collect(),
    }
}

fn rule(section: &str) -> String {
    format!("policies:\n  p:\n    allow:\n      - host: api.test\n{section}")
}

#[test]
fn protocol_sections_are_checked_with_their_paths() {
    for (section, needle) in [
        (
            "        graphql: { operations: [query, mutaton] }\n",
            "policies.p.allow[0].graphql.operations[1]: \"mutaton\": an entry is an operation type",
        ),
        (
            "        graphql: { ask: [\"mutation.add-comment\"] }\n",
            "policies.p.allow[0].graphql.ask[0]: \"add-comment\" contains '-'",
        ),
        (
            "        graphql: { names: [\"\"] }\n",
            "policies.p.allow[0].graphql.names[0]",
        ),
        ("        graphql: { queries: [x] }\n", "unknown field `queries`"),
        (
            "        tls: tunnel\n        graphql: { operations: [query] }\n",
            "policies.p.allow[0].graphql: `graphql` needs to read each request",
        ),
        (
            "        mcp: { tools: [a] }\n        graphql: { operations: [query] }\n",
            "policies.p.allow[0].graphql: a rule judges MCP or GraphQL, not both",
        ),
        (
            "        mcp: { tools: [\"a b\"] }\n",
            "policies.p.allow[0].mcp.tools[0]",
        ),
        (
            "        mcp: { methods: [tools/call] }\n",
            "policies.p.allow[0].mcp.methods[0]: \"tools/call\": tools/call is judged by tool name",
        ),
        (
            "        tls: tunnel\n        mcp: { tools: [a] }\n",
            "policies.p.allow[0].mcp: `mcp` needs to read each message",
        ),
    ] {
        let errs = errors(&rule(section));
        assert!(errs.iter().any(|e| e.contains(needle)), "{needle}: {errs:#?}");
    }
    assert!(
        errors(&rule(
            "        graphql: { operations: [query, mutation.addComment], ask: [mutation], deny: [\"mutation.delete*\", subscription], names: [\"Issue*\"] }\n"
        ))
        .is_empty()
    );
}
