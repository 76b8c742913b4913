//! A hostile MCP server (`tests/servers/mcp_hostile_server.py`: the SDK's own server behind an ASGI layer that
//! misbehaves) against the official SDK's client (`tests/clients/mcp_agent.py`) through cordon:
//!
//! - it answers `tools/list` with a 307 to another path of its origin, where the tool list says something else.
//!   The SDK follows (it follows redirects within the origin that keep the method); cordon compares that list
//!   with the pins the sandbox has for the origin, so the changed tool is hidden and its next call, at `/mcp`, is
//!   refused (`mcp_tool_changed`). Before pins were the origin's, the list at `/mcp/v2` met no pins at all.
//! - it sends a tool list as an event stream under a Content-Type a client reads as one but cordon cannot be sure
//!   of: refused (`mcp_answer_unreadable`), where it used to pass unfiltered.
//! - a session id one sandbox was given is refused to another (`mcp_session_foreign`).

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

use serde_json::Value;

use super::harness::{Case, Spec};
use super::mcp::{Server, agent, called, names, refused_by_cordon, server};
use crate::rigs::ports::free_port;
use crate::rigs::tls::TestCa;
use crate::rigs::wait::{TimedChild, Within};

/// The hostile server in `mode` (`redirect LOCATION`, `content-type VALUE`).
fn hostile(ca: &TestCa, dir: &std::path::Path, mode: &str, value: &str) -> Server {
    let (cert, key) = ca.pem_pair(&["mcp.test"]);
    let (cert_path, key_path) = (dir.join("mcp-cert.pem"), dir.join("mcp-key.pem"));
    std::fs::write(&cert_path, cert).unwrap();
    std::fs::write(&key_path, key).unwrap();
    let port = free_port();
    let (calls, swap) = (dir.join("calls.jsonl"), dir.join("swap"));
    let value = value.replace("{port}", &port.to_string());
    let mut child = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/servers/mcp_hostile_server.py"
        ))
        .args(["--port", &port.to_string(), "--cert"])
        .arg(&cert_path)
        .arg("--key")
        .arg(&key_path)
        .arg("--calls")
        .arg(&calls)
        .arg("--swap")
        .arg(&swap)
        .args([mode, &value])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 tests/servers/mcp_hostile_server.py (pip install mcp, see .ci/run)");
    let line = crate::rigs::wait::first_line(
        &mut child,
        "the hostile MCP server (python3 tests/servers/mcp_hostile_server.py)",
        std::time::Duration::from_secs(60),
    );
    assert_eq!(line.trim(), "ready", "the hostile MCP server did not start");
    Server {
        child,
        port,
        calls,
        swap,
    }
}

/// cordon with one rule for the server (every path of it), read_file and send_email allowed at once.
async fn case_for(ca: TestCa, server: &Server) -> Case {
    let spec = Spec {
        rules: format!(
            "      - host: mcp.test\n        ports: [{}]\n        mcp: {{ tools: [read_file, send_email], deny: [\"delete_*\"] }}\n",
            server.port
        ),
        names: vec!["mcp.test"],
        ..Spec::default()
    };
    Case::start(ca, spec).await
}

/// The official SDK an agent is built on.
#[derive(Debug, Clone, Copy)]
enum Sdk {
    /// PyPI `mcp` (tests/clients/mcp_agent.py).
    Python,
    /// npm `@modelcontextprotocol/sdk` (tests/clients/mcp_agent.mjs).
    TypeScript,
}

/// Where `.ci/run` installs the TypeScript SDK.
fn ts_prefix() -> String {
    let prefix = std::env::var("CORDON_MCP_TS_PREFIX")
        .unwrap_or_else(|_| format!("{}/.cache/cordon-mcp-ts", std::env::var("HOME").unwrap()));
    assert!(
        std::path::Path::new(&prefix)
            .join("node_modules/@modelcontextprotocol/sdk")
            .is_dir(),
        "@modelcontextprotocol/sdk is not installed under {prefix} (CORDON_MCP_TS_PREFIX): run .ci/run, or \
         npm install --prefix {prefix} as it does"
    );
    prefix
}

/// What the agent said, one JSON value per step, and its stderr.
async fn run(sdk: Sdk, case: &Case, server: &Server, steps: &[&str]) -> (Vec<Value>, String) {
    let agent = match sdk {
        Sdk::Python => agent(case, server, steps),
        Sdk::TypeScript => {
            let mut c = case.client("node");
            c.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/mcp_agent.mjs"))
                .arg(super::mcp::url(server))
                .args(steps)
                .env("CORDON_MCP_TS_PREFIX", ts_prefix());
            tokio::task::spawn_blocking(move || c.timed_output().unwrap())
        }
    };
    let out = tokio::time::timeout(std::time::Duration::from_secs(120), agent)
        .await
        .expect("the agent took over 120 s")
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (said, String::from_utf8_lossy(&out.stderr).into_owned())
}

const SEND: &str = r#"call send_email {"to": "bob@example.com", "subject": "hi", "body": "the report"}"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_list_redirected_to_another_path_of_the_server_meets_the_pins_it_already_has() {
    redirected(Sdk::Python).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_list_redirected_for_the_typescript_sdk_meets_the_pins_it_already_has() {
    redirected(Sdk::TypeScript).await;
}

/// The redirect case with `sdk`'s client.
async fn redirected(sdk: Sdk) {
    // Every spelling of "another path of the same server" a redirect can name: a new path, a trailing slash, the
    // path in another case, percent-encoded, the absolute URL of the same origin, one with a dot segment.
    for location in [
        "/mcp/v2",
        "/mcp/",
        "/MCP/v2",
        "/%6dcp/v2",
        "https://mcp.test:{port}/mcp/v2",
        "https://MCP.test:{port}/MCP",
        "/mcp/x/../v2",
        "v2/../MCP",
    ] {
        let ca = Case::ca();
        let scratch = tempfile::tempdir().unwrap();
        let server = hostile(&ca, scratch.path(), "redirect", location);
        let case = case_for(ca, &server).await;
        let swap = format!("touch {}", server.swap.display());
        let steps = ["list", &swap, "list", SEND, r#"call read_file {"path": "a"}"#];
        let (said, err) = run(sdk, &case, &server, &steps).await;
        assert_eq!(said.len(), 5, "{sdk:?} {location}: {said:#?} {err}");
        // First, at /mcp: both tools as they are, pinned.
        assert_eq!(names(&said[0]), ["read_file", "send_email"], "{location}");
        // Then the server redirects tools/list elsewhere and says something else there: the SDK followed, and
        // cordon held the list to the origin's pins.
        assert_eq!(names(&said[2]), ["read_file"], "{location}: {:#?}", said[2]);
        // The next call goes to /mcp: refused, never sent.
        refused_by_cordon(&said[3], "mcp_tool_changed");
        assert_eq!(said[4]["result"], "contents of a", "{location}");
        assert_eq!(called(&server), ["read_file"], "{location}");
        case.audited(|r| r["mcp"]["tool"] == "send_email" && r["reason"] == "mcp_tool_changed")
            .await;
        // The list came from the path the server redirected to.
        case.audited(|r| r["mcp"]["method"] == "tools/list" && r["path"] != "/mcp")
            .await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_list_in_an_event_stream_under_a_loose_content_type_is_refused() {
    loose(Sdk::Python).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_list_under_a_loose_content_type_is_refused_to_the_typescript_sdk() {
    loose(Sdk::TypeScript).await;
}

/// The loose Content-Type case with `sdk`'s client.
async fn loose(sdk: Sdk) {
    // Each is a type some client reads as an event stream (by its start, by containing it, by its essence
    // whatever the parameters) and cordon cannot be sure of.
    for content_type in [
        "text/event-stream, application/json",
        "text/plain; profile=text/event-stream",
        "Text/Event-Stream; profile=mcp",
        "text/event-stream; charset=latin1",
    ] {
        let ca = Case::ca();
        let scratch = tempfile::tempdir().unwrap();
        let server = hostile(&ca, scratch.path(), "content-type", content_type);
        let case = case_for(ca, &server).await;
        let swap = format!("touch {}", server.swap.display());
        let (said, err) = run(sdk, &case, &server, &["list", &swap, "list"]).await;
        assert_eq!(
            names(&said[0]),
            ["read_file", "send_email"],
            "{sdk:?} {content_type}: {said:#?} {err}"
        );
        // The swapped list (send_email changed, delete_repo shown) never reaches the agent.
        assert_eq!(said.len(), 3, "{sdk:?} {content_type}: {said:#?} {err}");
        assert_eq!(said[2]["http_error"], 502, "{content_type}: {said:#?}");
        assert_eq!(said[2]["reason"], "mcp_answer_unreadable", "{content_type}: {said:#?}");
        let text = serde_json::to_string(&said).unwrap();
        assert!(!text.contains("delete_repo") && !text.contains("attacker"), "{text}");
    }
}

/// Another sandbox of the case's cordon, under the same policy, and its environment (its own CA bundle).
fn second_sandbox(case: &Case, id: &str) -> BTreeMap<String, String> {
    case.admin(&["sandbox", "create", "--user", "e2e", "--id", id, "--policy", "e2e"]);
    let mut env: BTreeMap<String, String> =
        serde_json::from_str(&case.admin(&["sandbox", "env", id, "--format", "json"])).unwrap();
    let ca_file = env["SSL_CERT_FILE"].clone();
    for v in env.values_mut().filter(|v| **v == ca_file) {
        *v = case.path(&format!("{id}-ca.pem")).display().to_string();
    }
    std::fs::write(&env["SSL_CERT_FILE"], case.admin(&["sandbox", "ca-bundle", id])).unwrap();
    env
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_id_one_sandbox_was_given_is_refused_to_another() {
    let ca = Case::ca();
    let scratch = tempfile::tempdir().unwrap();
    let server = server(&ca, scratch.path(), true);
    let case = case_for(ca, &server).await;
    let other = second_sandbox(&case, "thief");
    let url = super::mcp::url(&server);
    let post = |env: &BTreeMap<String, String>, session: Option<&str>, body: &str| {
        let mut c = case.client_of(env, "curl");
        c.args(["-sS", "--max-time", "30"])
            .args(["-H", "content-type: application/json"])
            .args(["-H", "accept: application/json, text/event-stream"])
            .args(["-H", "mcp-protocol-version: 2025-06-18"]);
        if let Some(id) = session {
            c.args(["-H", &format!("mcp-session-id: {id}")]);
        }
        c.args(["--data-binary", body, &url]);
        // The answer from the server (or cordon), not the proxy's answer to curl's CONNECT before it.
        let r = crate::rigs::curl::run(c);
        format!("{}\r\n{}", r.head(), r.text())
    };
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}"#;
    let said = post(&case.env, None, init);
    let session = said
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("mcp-session-id:")
                .map(|_| l[15..].trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no session id: {said}"));
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    // Another sandbox with that session id: refused before it reaches the server.
    let stolen = post(&other, Some(&session), list);
    assert!(
        stolen.starts_with("HTTP/1.1 403") || stolen.starts_with("HTTP/2 403"),
        "{stolen}"
    );
    assert!(stolen.contains("x-cordon-reason: mcp_session_foreign"), "{stolen}");
    let call =
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"x"}}}"#;
    assert!(post(&other, Some(&session), call).contains("mcp_session_foreign"));
    // Its own sandbox goes on with it.
    let own = post(&case.env, Some(&session), list);
    assert!(
        own.contains("read_file") && !own.contains("mcp_session_foreign"),
        "{own}"
    );
    assert!(called(&server).is_empty(), "{:?}", called(&server));
    case.audited(|r| r["reason"] == "mcp_session_foreign" && r["sandbox"] == "thief")
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_older_http_sse_transport_still_works_filtered_and_pinned() {
    // Its POSTs are answered 202 "Accepted" in plain text (a body cordon does not read as JSON) and its messages
    // come back in the GET stream: the list there is filtered and pinned like any other, the call goes through.
    let ca = Case::ca();
    let scratch = tempfile::tempdir().unwrap();
    let server = server(&ca, scratch.path(), false);
    let case = case_for(ca, &server).await;
    let swap = format!("touch {}", server.swap.display());
    let url = format!("https://mcp.test:{}/sse", server.port);
    let steps = ["list", &swap, "list", r#"call read_file {"path": "a"}"#];
    let mut c = case.client("python3");
    c.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/mcp_agent.py"))
        .arg(&url)
        .args(steps);
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        tokio::task::spawn_blocking(move || c.timed_output().unwrap()),
    )
    .await
    .expect("the agent took over 120 s")
    .unwrap();
    let said: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(said.len(), 4, "{said:#?} {err}");
    assert_eq!(names(&said[0]), ["read_file", "send_email"]);
    // The swapped send_email is hidden (it changed), delete_repo never shown.
    assert_eq!(names(&said[2]), ["read_file"], "{:#?}", said[2]);
    assert_eq!(said[3]["result"], "contents of a", "{said:#?}");
    assert_eq!(called(&server), ["read_file"]);
    let accepted = case
        .audited(|r| r["path"] == "/messages/" && r["mcp"]["tool"] == "read_file")
        .await;
    assert_eq!(accepted["status"], 202, "{accepted}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_older_transports_session_in_the_query_is_refused_to_another_sandbox() {
    let ca = Case::ca();
    let scratch = tempfile::tempdir().unwrap();
    let server = server(&ca, scratch.path(), false);
    let case = case_for(ca, &server).await;
    let other = second_sandbox(&case, "thief");
    let base = format!("https://mcp.test:{}", server.port);
    // The sandbox opens the stream; the endpoint event names its session.
    let stream = case.path("stream.txt");
    let mut get = case.client("curl");
    get.args(["-sS", "-N", "--max-time", "30", "-o"])
        .arg(&stream)
        .arg(format!("{base}/sse"));
    let mut get = get.spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let endpoint = loop {
        let text = std::fs::read_to_string(&stream).unwrap_or_default();
        if let Some(data) = text
            .split("event: endpoint")
            .nth(1)
            .and_then(|rest| rest.lines().find_map(|l| l.strip_prefix("data: ")))
        {
            break data.trim().to_owned();
        }
        assert!(std::time::Instant::now() < deadline, "no endpoint event: {text}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert!(endpoint.contains("session_id="), "{endpoint}");
    let post = |env: &BTreeMap<String, String>| {
        let mut c = case.client_of(env, "curl");
        c.args(["-sS", "--max-time", "30", "-H", "content-type: application/json"])
            .args(["--data-binary", r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#])
            .arg(format!("{base}{endpoint}"));
        let r = crate::rigs::curl::run(c);
        format!("{} {}", r.status, r.reason())
    };
    // SECURITY: another sandbox with the session of the query is refused before anything reaches the server.
    assert_eq!(post(&other), "403 mcp_session_foreign");
    // Its own sandbox goes on (the server accepts, 202).
    assert_eq!(post(&case.env), "202 ");
    let _ = get.kill();
    let _ = get.timed_wait();
    case.audited(|r| r["reason"] == "mcp_session_foreign" && r["sandbox"] == "thief")
        .await;
}
