//! Micro-benchmarks of judging what agents speak: a 2 KiB MCP `tools/call` (read strictly, judged by tool name)
//! and a 2 KiB GraphQL document (read from a JSON POST and from a GET's query string, parsed, every operation
//! judged by its root fields through its fragments), and what the credentials step reads of a 1 MiB model API
//! call it reads whole (the exfiltration scan, then the token-request reader).
//! `cargo bench --features fuzzing --bench protocols`.
#![expect(clippy::unwrap_used, missing_docs, reason = "benchmark")]

use std::hint::black_box;

use cordon::fuzzing::{Detector, graphql_judge, mcp_judge, whole_body};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use secrecy::SecretString;

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

/// A chat-completions call of about 1 MiB: messages whose text holds line breaks and quotes, so the JSON
/// carries escapes and the body has a decoded reading besides itself (as a model API call does).
fn chat() -> Vec<u8> {
    let turn = "Here is the file you asked for:\n\n```\nfn main() {\n    println!(\"hello\");\n}\n```\n";
    let messages: Vec<serde_json::Value> = (0..1 << 20)
        .scan(0usize, |size, i| {
            (*size < 1 << 20).then(|| {
                *size += turn.len() + 40;
                let role = if i % 2 == 0 { "user" } else { "assistant" };
                serde_json::json!({ "role": role, "content": format!("{i}: {turn}") })
            })
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({ "model": "gpt-4o", "messages": messages })).unwrap()
}

/// The credentials step's reads of a whole body with one injected credential (every model API call).
fn credentials(c: &mut Criterion) {
    let body = chat();
    let parts = http::Request::post("https://api.openai.com/v1/chat/completions")
        .header("content-type", "application/json")
        .body(())
        .unwrap()
        .into_parts()
        .0;
    let secrets = [(
        "openai".to_string(),
        SecretString::from("sk-live-4f9a1c7e2b8d6a03f1e2d3c4b5a69788".to_string()),
    )];
    let detector = Detector::new(&secrets).unwrap();
    let body = bytes::Bytes::from(body);
    let (found, grants) = whole_body(&detector, &parts, body.clone());
    assert!(found.is_empty() && grants == Ok(Vec::new()));
    let mut g = c.benchmark_group("credentials");
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.bench_function("chat_body_1mib", |b| {
        b.iter(|| whole_body(&detector, &parts, black_box(body.clone())))
    });
    g.finish();
}

criterion_group!(benches, judge, credentials);
criterion_main!(benches);
