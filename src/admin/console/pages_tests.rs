use serde_json::json;

use super::*;

#[test]
fn a_held_request_shows_the_mcp_tools_and_graphql_operations_it_asks_for_escaped() {
    let p = json!({
        "id": "ap-1", "method": "POST", "url": "https://api.example.com/graphql", "sandbox": "sb-1",
        "user": "alice", "policy": "p", "rule": 0, "asked_at": "t", "expires_at": "t", "headers": [],
        "body": { "length": 10, "sha256": "00" }, "excerpt": "",
        "tools": ["send_email"],
        "operations": ["mutation <b>AddComment</b>: addComment"],
    });
    let html = held(&[p], None, None).into_string();
    assert!(
        html.contains("<dt>MCP tools</dt>") && html.contains("<code>send_email</code>"),
        "{html}"
    );
    assert!(html.contains("<dt>GraphQL operations</dt>"), "{html}");
    assert!(
        html.contains("mutation &lt;b&gt;AddComment&lt;/b&gt;: addComment"),
        "{html}"
    );
    let plain = held(&[json!({"id": "ap-2", "body": {}})], None, None).into_string();
    assert!(
        !plain.contains("MCP tools") && !plain.contains("GraphQL operations"),
        "{plain}"
    );
}

#[test]
fn a_held_mcp_call_shows_its_arguments_whole_and_escaped() {
    let tail = "DELETE-EVERYTHING";
    let arguments = format!("{{\n  \"a\": \"{}\",\n  \"z\": \"<b>{tail}</b>\"\n}}", "x".repeat(2000));
    let p = json!({"id": "ap-3", "body": {}, "calls": [{"tool": "add_comment", "arguments": arguments}]});
    let html = held(&[p], None, None).into_string();
    assert!(html.contains("<pre class=\"arguments\">"), "{html}");
    assert!(html.contains(&format!("&lt;b&gt;{tail}&lt;/b&gt;")), "{html}");
    assert!(html.contains(&"x".repeat(2000)), "whole");
}

#[test]
fn each_sandbox_shows_what_its_model_calls_spent() {
    let list = [
        json!({"id": "sb-1", "user": "alice", "policy": "p",
               "model_spend": {"calls": 3, "input_tokens": 10, "output_tokens": 32, "cost": 0.25}}),
        json!({"id": "sb-2", "user": "bob", "policy": "p", "model_spend": null}),
    ];
    let html = sandbox_list(&list, None, &|_| Vec::new()).into_string();
    assert!(html.contains("<th>Model spend</th>"), "{html}");
    assert!(html.contains("42 tokens in 3 calls, cost 0.25"), "{html}");
    assert!(html.contains("<td class=\"spend\">none</td>"), "{html}");
}
