//! MCP through cordon with the official SDK (PyPI `mcp`) on both sides: a server with three tools
//! (`tests/servers/mcp_tools_server.py`: read_file, send_email, delete_repo) and the agent's client
//! (`tests/clients/mcp_agent.py`), over streamable HTTP with SSE answers and with JSON answers. The rule lets
//! read_file through, asks before send_email and denies delete_*: the list the agent sees, a call allowed, a call
//! held then allowed (and one denied), a call refused with a JSON-RPC error, a tool that changes mid-session; and,
//! with curl, what is not JSON-RPC, a member written twice, a batch, and the methods MCP does not use.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;
use tokio::task::JoinHandle;

use super::harness::{Case, Spec};
use crate::rigs::ports::free_port;
use crate::rigs::tls::TestCa;
use crate::rigs::wait::{TimedChild, Within};

/// The MCP server, stopped when dropped.
pub(super) struct Server {
    pub(super) child: Child,
    pub(super) port: u16,
    pub(super) calls: PathBuf,
    pub(super) swap: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.timed_wait();
    }
}

pub(super) fn server(ca: &TestCa, dir: &std::path::Path, json: bool) -> Server {
    let (cert, key) = ca.pem_pair(&["mcp.test"]);
    let (cert_path, key_path) = (dir.join("mcp-cert.pem"), dir.join("mcp-key.pem"));
    std::fs::write(&cert_path, cert).unwrap();
    std::fs::write(&key_path, key).unwrap();
    let port = free_port();
    let (calls, swap) = (dir.join("calls.jsonl"), dir.join("swap"));
    let mut c = Command::new("python3");
    c.arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/servers/mcp_tools_server.py"
    ))
    .args(["--port", &port.to_string(), "--cert"])
    .arg(&cert_path)
    .arg("--key")
    .arg(&key_path)
    .arg("--calls")
    .arg(&calls)
    .arg("--swap")
    .arg(&swap)
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    if json {
        c.arg("--json-response");
    }
    let mut child = c
        .spawn()
        .expect("python3 tests/servers/mcp_tools_server.py (pip install mcp, see .ci/run)");
    let line = crate::rigs::wait::first_line(
        &mut child,
        "the MCP server (python3 tests/servers/mcp_tools_server.py; pip install mcp, see .ci/run)",
        std::time::Duration::from_secs(60),
    );
    assert_eq!(
        line.trim(),
        "ready",
        "the MCP server did not start (is PyPI's mcp installed?)"
    );
    Server {
        child,
        port,
        calls,
        swap,
    }
}

const RULE: &str = "mcp: { tools: [read_file], ask: [send_email], deny: [\"delete_*\"] }";

async fn case(json: bool) -> (Case, Server, tempfile::TempDir) {
    case_with(json, false).await
}

/// The secret of the `mcp` credential in the masking case.
const SECRET: &str = "mcp-secret-4f1c9a7be2d8";

/// With `masked`, a credential `mcp` bound to the server, swapped for its placeholder in request bodies and
/// masked in whatever comes back (`mask_echo`).
async fn case_with(json: bool, masked: bool) -> (Case, Server, tempfile::TempDir) {
    let ca = Case::ca();
    let scratch = tempfile::tempdir().unwrap();
    let server = server(&ca, scratch.path(), json);
    let mut spec = Spec {
        rules: format!(
            "      - host: mcp.test\n        ports: [{}]\n        {RULE}\n",
            server.port
        ),
        names: vec!["mcp.test"],
        ..Spec::default()
    };
    if masked {
        spec.credentials = format!(
            "  mcp:\n    source: {{ env: MCP_SECRET }}\n    bind: {{ hosts: [mcp.test], ports: [{}] }}\n    \
             inject: {{ placeholder: {{ body: true }} }}\n    mask_echo: true\n",
            server.port
        );
        spec.policy_credentials = vec!["mcp"];
        spec.secrets = vec![("MCP_SECRET", SECRET)];
    }
    (Case::start(ca, spec).await, server, scratch)
}

pub(super) fn url(server: &Server) -> String {
    format!("https://mcp.test:{}/mcp", server.port)
}

pub(super) fn names(step: &Value) -> Vec<&str> {
    step["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {step}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

pub(super) fn called(server: &Server) -> Vec<String> {
    std::fs::read_to_string(&server.calls)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["tool"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// The agent's steps, in one session, run in the background.
pub(super) fn agent(case: &Case, server: &Server, steps: &[&str]) -> JoinHandle<Output> {
    let mut c = case.client("python3");
    c.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/mcp_agent.py"))
        .arg(url(server))
        .args(steps)
        .stdin(Stdio::null());
    tokio::task::spawn_blocking(move || c.timed_output().unwrap())
}

pub(super) fn refused_by_cordon(step: &Value, reason: &str) {
    assert_eq!(step["error"]["code"], -32001, "{step}");
    assert!(step["error"]["message"].as_str().unwrap().contains(reason), "{step}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sdk_sees_only_what_it_may_call_and_calls_are_allowed_asked_refused_and_pinned() {
    for json in [false, true] {
        let (case, server, _scratch) = case(json).await;
        let swap = server.swap.display().to_string();
        let send = r#"call send_email {"to": "bob@example.com", "subject": "hi", "body": "the report"}"#;
        let steps = [
            "list",
            r#"call read_file {"path": "notes.txt"}"#,
            r#"call delete_repo {"name": "cordon"}"#,
            send,
            &format!("touch {swap}"),
            "list",
            send,
        ];
        // send_email waits for a person, who sees the tool and its arguments.
        let (held, run) = case.held(agent(&case, &server, &steps)).await;
        assert_eq!(held["tools"], serde_json::json!(["send_email"]), "{held}");
        assert!(held["excerpt"].as_str().unwrap().contains("the report"), "{held}");
        assert_eq!(held["method"], "POST", "{held}");
        case.reviewer(&["approvals", "allow", held["id"].as_str().unwrap()]);
        let out = run.await.unwrap();
        let said: Vec<Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let mode = if json { "json" } else { "sse" };
        assert_eq!(
            said.len(),
            7,
            "{mode}: {said:#?} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The list shows what may be called (asked for or not), never delete_repo.
        assert_eq!(names(&said[0]), ["read_file", "send_email"], "{mode}");
        assert_eq!(said[1]["result"], "contents of notes.txt", "{mode}");
        refused_by_cordon(&said[2], "mcp_tool_denied");
        assert_eq!(said[3]["result"], "sent to bob@example.com", "{mode}");
        // send_email now says something else: it is taken out of the list, and its calls refused.
        assert_eq!(names(&said[5]), ["read_file"], "{mode}");
        refused_by_cordon(&said[6], "mcp_tool_changed");
        // Only what cordon let through reached the server.
        assert_eq!(called(&server), ["read_file", "send_email"], "{mode}");
        let denied = case
            .audited(|r| r["mcp"]["tool"] == "delete_repo" && r["reason"] == "mcp_tool_denied")
            .await;
        assert_eq!(denied["mcp"]["method"], "tools/call");
        assert_eq!(denied["decision"], "deny");
        case.audited(|r| {
            r["mcp"]["tool"] == "send_email"
                && r["approval"]["outcome"] == "allow"
                && r["approval"]["by"] == "e2e-reviewer"
        })
        .await;
        case.audited(|r| r["mcp"]["tool"] == "send_email" && r["reason"] == "mcp_tool_changed")
            .await;
        case.audited(|r| r["mcp"]["method"] == "initialize").await;
        crate::rigs::audit::assert_schema(&case.path("audit.log"));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_a_person_denies_is_a_json_rpc_error_and_never_reaches_the_server() {
    let (case, server, _scratch) = case(true).await;
    let send = r#"call send_email {"to": "x@example.com", "subject": "s", "body": "b"}"#;
    let (held, run) = case.held(agent(&case, &server, &[send])).await;
    case.reviewer(&["approvals", "deny", held["id"].as_str().unwrap()]);
    let out = run.await.unwrap();
    let step: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    refused_by_cordon(&step, "protocol_approval_denied");
    assert!(called(&server).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn what_is_not_json_rpc_is_400_and_a_batch_goes_whole_or_not_at_all() {
    let (case, server, _scratch) = case(true).await;
    let post = |body: &str, extra: &[&str]| {
        let mut c = case.client("curl");
        c.args([
            "-sS",
            "-o",
            "-",
            "-w",
            "\n%{http_code}",
            "-H",
            "content-type: application/json",
        ])
        .args(["-H", "accept: application/json, text/event-stream"])
        .args(extra)
        .args(["--data-binary", body])
        .arg(url(&server));
        let out = c.timed_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').unwrap();
        (
            code.to_owned(),
            format!("{body}{}", String::from_utf8_lossy(&out.stderr)),
        )
    };
    for (body, why) in [
        ("tools/call delete_repo", "not a JSON-RPC message"),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"method\":\"tools/call\",\"params\":{\"name\":\"delete_repo\"}}",
            "twice",
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"read_file\",\"name\":\"delete_repo\"}}",
            "twice",
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"read_file\",\"n\\u0061me\":\"delete_repo\"}}",
            "twice",
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":[\"delete_repo\"]}",
            "names its tool",
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}",
            "names its tool",
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"tools/call\",\"params\":{\"name\":\"read_file\"}}",
            "neither a string nor an integer",
        ),
        ("[]", "empty batch"),
    ] {
        let (code, said) = post(body, &[]);
        assert_eq!(code, "400", "{body}: {said}");
        assert!(said.contains(why), "{body}: {said}");
    }
    // SECURITY: a WebSocket's frames would pass unread.
    let (code, said) = post(
        "{}",
        &[
            "-X",
            "GET",
            "--http1.1",
            "-H",
            "connection: upgrade",
            "-H",
            "upgrade: websocket",
            "-H",
            "sec-websocket-version: 13",
            "-H",
            "sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==",
        ],
    );
    assert_eq!(code, "400", "{said}");
    assert!(said.contains("WebSocket"), "{said}");
    // A compressed message cannot be judged.
    let (code, said) = post("{}", &["-H", "content-encoding: gzip"]);
    assert_eq!(code, "400", "{said}");
    // A batch with one refused call: every request of it answered with the error, nothing sent.
    let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a"}}},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"DELETE_REPO","arguments":{"name":"x"}}}]"#;
    let (code, said) = post(batch, &[]);
    assert_eq!(code, "200", "{said}");
    let answers: Value = serde_json::from_str(&said).unwrap();
    assert_eq!(answers.as_array().unwrap().len(), 2, "{said}");
    assert_eq!(answers[0]["id"], 1);
    assert_eq!(answers[1]["error"]["data"]["reason"], "mcp_tool_denied");
    // A method beyond the lifecycle the rule does not name.
    let (code, said) = post(
        r#"{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}"#,
        &[],
    );
    assert_eq!(code, "200", "{said}");
    assert!(said.contains("mcp_method_denied"), "{said}");
    // Methods MCP's HTTP transport does not use.
    for method in ["PUT", "PATCH"] {
        let (code, said) = post("{}", &["-X", method]);
        assert_eq!(code, "400", "{method}: {said}");
    }
    assert!(called(&server).is_empty(), "{:?}", called(&server));
    // `cordon explain` names the MCP step.
    let out = case.explain("POST", &url(&server));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("mcp      rule 0 reads each JSON-RPC message of a POST"),
        "{}",
        super::harness::text(&out)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_secret_a_tool_echoes_is_masked_in_the_event_stream_and_the_json_answer() {
    // SECURITY: the masking of what comes back runs on an MCP endpoint's answers as they stream, before the tool
    // list filter: a tool that echoes the secret swapped into its arguments shows the sandbox its placeholder.
    for json in [false, true] {
        let (case, server, _scratch) = case_with(json, true).await;
        let placeholder = case.env["CORDON_PLACEHOLDER_MCP"].clone();
        let call = format!(r#"call read_file {{"path": "{placeholder}"}}"#);
        let out = agent(&case, &server, &["list", &call]).await.unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(!said.contains(SECRET), "the secret came back: {said}");
        assert!(
            said.contains(&format!("contents of {placeholder}")),
            "{said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The server was given the secret, not the placeholder.
        let calls = std::fs::read_to_string(&server.calls).unwrap();
        assert!(calls.contains(SECRET) && !calls.contains(&placeholder), "{calls}");
    }
}
