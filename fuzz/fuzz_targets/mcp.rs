//! MCP (`src/mcp/`) on arbitrary POST bodies, under the rule `tools: ["read_*"], ask: ["send_*"],
//! deny: ["delete_*"]`, against a reading of the same body with serde_json alone:
//! - no panic;
//! - a body that passes or waits for a person is JSON whose every message is an object with `jsonrpc` "2.0",
//!   and every `tools/call` of it names a tool (`params.name`) that the rule lets through (`read_*`, exactly)
//!   or, only when waiting, asks for (`send_*`, any case), and none that it denies (`delete_*`, any case);
//! - the verdict does not depend on whitespace around the body.
#![no_main]

use cordon::fuzzing::mcp_judge;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let verdict = mcp_judge(data);
    let mut spaced = b" \n".to_vec();
    spaced.extend_from_slice(data);
    spaced.extend_from_slice(b"\r\n ");
    assert_eq!(mcp_judge(&spaced), verdict, "whitespace changed the verdict on {data:?}");
    if verdict != "pass" && verdict != "ask" {
        return;
    }
    let value: Value = serde_json::from_slice(data).expect("a body that goes is JSON");
    let messages = match &value {
        Value::Array(items) => items.clone(),
        one => vec![one.clone()],
    };
    assert!(!messages.is_empty());
    for m in &messages {
        assert_eq!(m["jsonrpc"], "2.0", "{m}");
        if m["method"] == "tools/call" {
            let tool = m["params"]["name"].as_str().expect("a tools/call that goes names its tool");
            let lower = tool.to_ascii_lowercase();
            assert!(!lower.starts_with("delete_"), "a denied tool went: {tool}");
            let allowed = tool.starts_with("read_");
            let asked = lower.starts_with("send_");
            assert!(allowed || (asked && verdict == "ask"), "{tool} went as {verdict}");
        }
    }
});
