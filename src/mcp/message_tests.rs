#![expect(clippy::unwrap_used, clippy::panic, reason = "tests")]

use super::*;

#[test]
fn requests_notifications_answers_and_batches() {
    let (m, batch) =
        parse(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":1}}}"#).unwrap();
    assert!(!batch);
    assert_eq!(m[0].method(), Some("tools/call"));
    assert_eq!(m[0].id(), Some(&serde_json::json!(1)));
    let Message::Request { params, .. } = &m[0] else {
        panic!()
    };
    assert_eq!(
        call(params.as_ref()).unwrap(),
        Call {
            tool: "x".into(),
            arguments: serde_json::json!({"a":1})
        }
    );
    let (m, batch) = parse(
        br#" [{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"a","result":{}},{"jsonrpc":"2.0","id":"b","method":"ping"}]"#,
    )
    .unwrap();
    assert!(batch);
    assert_eq!(m.len(), 3);
    assert_eq!(
        m[0],
        Message::Notification {
            method: "notifications/initialized".into()
        }
    );
    assert_eq!(m[1], Message::Response);
}

#[test]
fn what_is_not_strict_json_rpc_is_refused_saying_why() {
    let refused = |body: &str, why: &str| {
        let e = parse(body.as_bytes()).unwrap_err();
        assert!(e.contains(why), "{body}: {e}");
    };
    refused("", "empty body");
    refused("  ", "empty body");
    refused("tools/call", "not a JSON-RPC message");
    refused("[]", "empty batch");
    refused(r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, "\"2.0\"");
    refused(r#"{"id":1,"method":"ping"}"#, "jsonrpc");
    refused(r#"{"jsonrpc":"2.0","id":1,"method":"ping","extra":1}"#, "extra");
    refused(
        r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
        "neither a string nor an integer",
    );
    refused(
        r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
        "neither a string nor an integer",
    );
    refused(
        r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
        "neither a string nor an integer",
    );
    refused(
        r#"{"jsonrpc":"2.0","method":"ping","params":"x"}"#,
        "neither an object nor an array",
    );
    refused(
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}"#,
        "also an answer",
    );
    refused(r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{}}"#, "exactly one");
    refused(r#"{"jsonrpc":"2.0"}"#, "neither a method nor an id");
    refused(
        r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0"}]"#,
        "message 1 of the batch",
    );
    refused(r#"{"jsonrpc":"2.0","id":1,"method":"ping"} trailing"#, "not JSON-RPC");
    let big = format!("[{}]", vec![r#"{"jsonrpc":"2.0","method":"ping"}"#; 257].join(","));
    refused(&big, "at most 256");
}

#[test]
fn a_member_twice_anywhere_is_refused() {
    for body in [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","name":"delete_repo"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"to":"a","to":"b"}}}"#,
        r#"[{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}]"#,
        // The same name written with an escape is the same member.
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","n\u0061me":"y"}}"#,
    ] {
        let e = parse(body.as_bytes()).unwrap_err();
        assert!(e.contains("twice"), "{body}: {e}");
    }
}

#[test]
fn a_tool_call_names_its_tool_as_a_string() {
    let p = |v: serde_json::Value| call(Some(&v));
    assert!(p(serde_json::json!({"arguments": {}})).is_err());
    assert!(p(serde_json::json!({"name": 5})).is_err());
    assert!(p(serde_json::json!(["x"])).is_err());
    assert!(call(None).is_err());
    assert_eq!(
        p(serde_json::json!({"name": "x", "_meta": {"progressToken": 1}}))
            .unwrap()
            .arguments,
        serde_json::Value::Null
    );
}

#[test]
fn a_message_of_the_wrong_shape_is_named_in_json_rpc_words_not_rusts() {
    for body in ["[1]", r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},"x"]"#] {
        let e = parse(body.as_bytes()).unwrap_err();
        assert!(
            e.contains("a JSON-RPC message (a JSON object)") && !e.contains("struct"),
            "{body}: {e}"
        );
    }
}
