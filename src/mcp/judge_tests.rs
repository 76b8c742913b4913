#![expect(clippy::unwrap_used, clippy::panic, reason = "tests")]

use super::*;

fn rules() -> McpRules {
    let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
    McpRules::new(v(&["read_file"]), v(&["send_email"]), v(&["delete_*"]), Vec::new()).unwrap()
}

fn call(id: u32, tool: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{}}}}}}"#)
}

fn unchanged(_: &str) -> bool {
    false
}

#[test]
fn lifecycle_allowed_asked_and_refused_calls() {
    let r = rules();
    for lifecycle in [
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":"x","result":{"roots":[]}}"#,
    ] {
        assert_eq!(
            judge(&r, &unchanged, lifecycle.as_bytes()).1,
            Judgement::Pass,
            "{lifecycle}"
        );
    }
    let (seen, v) = judge(&r, &unchanged, call(7, "read_file").as_bytes());
    assert_eq!(v, Judgement::Pass);
    assert_eq!(seen.tool.as_deref(), Some("read_file"));
    assert_eq!(seen.id, Some(serde_json::json!(7)));
    assert_eq!(
        judge(&r, &unchanged, call(8, "send_email").as_bytes()).1,
        Judgement::Ask(Asked {
            what: vec!["send_email".into()],
            ids: vec![serde_json::json!(8)],
            batch: None
        })
    );
    for (tool, reason) in [
        ("delete_repo", Reason::McpToolDenied),
        ("DELETE_REPO", Reason::McpToolDenied),
        ("write_file", Reason::McpToolDenied),
    ] {
        let Judgement::Refused(refused) = judge(&r, &unchanged, call(9, tool).as_bytes()).1 else {
            panic!("{tool}")
        };
        assert_eq!(refused.reason, reason);
        let answer: serde_json::Value = serde_json::from_slice(&refused.body).unwrap();
        assert_eq!(answer["id"], serde_json::json!(9));
    }
    let Judgement::Refused(refused) = judge(
        &r,
        &unchanged,
        br#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///x"}}"#,
    )
    .1
    else {
        panic!()
    };
    assert_eq!(refused.reason, Reason::McpMethodDenied);
    // A tool whose meaning changed is refused even where the rule allows it.
    let Judgement::Refused(refused) = judge(&r, &|t| t == "read_file", call(3, "read_file").as_bytes()).1 else {
        panic!()
    };
    assert_eq!(refused.reason, Reason::McpToolChanged);
}

#[test]
fn a_batch_goes_whole_or_not_at_all() {
    let r = rules();
    let batch = |calls: &[String]| format!("[{}]", calls.join(","));
    let (seen, v) = judge(
        &r,
        &unchanged,
        batch(&[call(1, "read_file"), call(2, "send_email")]).as_bytes(),
    );
    assert_eq!(
        v,
        Judgement::Ask(Asked {
            what: vec!["send_email".into()],
            ids: vec![serde_json::json!(1), serde_json::json!(2)],
            batch: Some(2)
        })
    );
    assert_eq!(seen.batch, Some(2));
    let Judgement::Refused(refused) = judge(
        &r,
        &unchanged,
        batch(&[call(1, "read_file"), call(2, "delete_repo")]).as_bytes(),
    )
    .1
    else {
        panic!()
    };
    let answer: serde_json::Value = serde_json::from_slice(&refused.body).unwrap();
    assert_eq!(answer.as_array().unwrap().len(), 2);
    assert_eq!(
        (&answer[0]["id"], &answer[1]["id"]),
        (&serde_json::json!(1), &serde_json::json!(2))
    );
    assert_eq!(answer[1]["error"]["code"], ERROR_CODE);
    assert_eq!(answer[1]["error"]["data"]["reason"], "mcp_tool_denied");
    // What the agent reads of any refusal, in the protocol's error (docs/src/refused.md).
    assert_eq!(answer[1]["error"]["data"]["whose"], "policy");
    assert_eq!(answer[1]["error"]["data"]["ask"], true);
    assert_eq!(answer[1]["error"]["data"]["schema"], crate::reason::SCHEMA);
    assert!(answer[1]["error"]["data"]["no_way_around"].is_string());
}

#[test]
fn not_json_rpc_and_calls_without_a_tool_are_invalid() {
    let r = rules();
    for body in [
        "".to_string(),
        "{}".to_string(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":["read_file"]}}"#.to_string(),
        r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"read_file"}}"#.to_string(),
    ] {
        assert!(
            matches!(judge(&r, &unchanged, body.as_bytes()).1, Judgement::Invalid(_)),
            "{body}"
        );
    }
}
