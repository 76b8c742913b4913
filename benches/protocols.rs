//! Micro-benchmarks of judging what agents speak: a 2 KiB MCP `tools/call` (read strictly, judged by tool name)
//! and a 2 KiB GraphQL document (read from a JSON POST and from a GET's query string, parsed, every operation
//! judged by its root fields through its fragments). `cargo bench --features fuzzing --bench protocols`.
#![expect(clippy::unwrap_used, missing_docs, reason = "benchmark")]

use std::hint::black_box;

use cordon::fuzzing::{graphql_judge, mcp_judge};
use criterion::{Criterion, criterion_group, criterion_main};

/// A tools/call of `read_file` whose arguments bring the body to about 2 KiB.
fn tools_call() -> Vec<u8> {
    let text = "lorem ipsum dolor sit amet ".repeat(70);
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": { "name": "read_file", "arguments": { "path": "/srv/notes.txt", "note": text }, "_meta": { "progressToken": 1 } }
    });
    serde_json::to_vec(&body).unwrap()
}

/// A query of about 2 KiB: named, with variables, nested selections, a fragment and an inline fragment.
fn document() -> String {
    let mut doc = String::from("query Issues($owner: String!, $first: Int = 20) {\n");
    for i in 0..18 {
        doc.push_str(&format!(
            "  r{i}: repository(owner: $owner, name: \"repo{i}\") {{ issues(first: $first) {{ nodes {{ ...IssueParts }} }} }}\n"
        ));
    }
    doc.push_str(
        "  ... on Query { viewer { login } }\n}\nfragment IssueParts on Issue { number title author { login } }\n",
    );
    doc
}

fn judge(c: &mut Criterion) {
    let call = tools_call();
    assert_eq!(mcp_judge(&call), "pass");
    c.bench_function(&format!("mcp_tools_call_{}b", call.len()), |b| {
        b.iter(|| mcp_judge(black_box(&call)))
    });
    let doc = document();
    let json = serde_json::to_vec(
        &serde_json::json!({ "query": doc, "operationName": "Issues", "variables": { "owner": "acme" } }),
    )
    .unwrap();
    assert_eq!(graphql_judge("POST", None, Some("application/json"), &json), "pass");
    c.bench_function(&format!("graphql_post_{}b", json.len()), |b| {
        b.iter(|| graphql_judge("POST", None, Some("application/json"), black_box(&json)))
    });
    let query: String = form_urlencoded::Serializer::new(String::new())
        .append_pair("query", &doc)
        .finish();
    assert_eq!(graphql_judge("GET", Some(&query), None, b""), "pass");
    c.bench_function(&format!("graphql_get_{}b", query.len()), |b| {
        b.iter(|| graphql_judge("GET", Some(black_box(&query)), None, b""))
    });
}

criterion_group!(benches, judge);
criterion_main!(benches);
