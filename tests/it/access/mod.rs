//! Access requests from inside a sandbox (`access.cordon.internal`), through the binary: an agent refused reads
//! where to ask, files a request and goes on once a person grants it in the console or the policy grants it at
//! once (`asking.rs`); what can never be granted, what ends a grant, and what a sandbox may read (`grants.rs`);
//! bad requests, limits and the name's other spellings (`requests.rs`).

mod asking;
mod grants;
mod requests;

use std::process::{Child, Stdio};

use serde_json::Value;

use crate::rigs::console::{ConsoleRig, console_rig_with};
use crate::rigs::wait::TimedChild;

/// The pay policy's boundary (pay.test on the upstream's port, any method and path, intercepted) and its
/// `access:` with `terms` (written into the console rig's policy `pay`).
pub(crate) fn asking(terms: &str) -> String {
    format!(
        "    boundary:\n      allow:\n        - {{ host: pay.test, ports: [UP_PORT] }}\n    access: {{ {terms} }}\n"
    )
}

/// The console rig (provider started unless `idp_later`), its policy `pay` with `extra` (see [`asking`]).
pub(crate) async fn rig(idp_later: bool, extra: &str) -> ConsoleRig {
    console_rig_with(idp_later, extra).await
}

/// `METHOD url` through cordon as sandbox sb1 (`body` POSTed when given), asking for JSON: status and the
/// answer's JSON (`null` when it is not JSON), and its content type.
pub(crate) fn through(rig: &ConsoleRig, method: &str, url: &str, body: Option<&str>) -> (u16, Value, String) {
    let mut c = crate::rigs::process::curl();
    c.args([
        "-sS",
        "--max-time",
        "20",
        "-X",
        method,
        "-H",
        "accept: application/json",
    ])
    .args(["-o", "-", "-w", "\n%{http_code} %{content_type}"])
    .args(["-x", &format!("http://sb1:tok1@127.0.0.1:{}", rig.proxy)]);
    if let Some(b) = body {
        c.args(["-H", "content-type: application/json", "--data-binary", b]);
    }
    let out = c
        .arg(url)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
        .timed_wait_with_output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, tail) = text.rsplit_once('\n').unwrap_or(("", &text));
    let (status, ctype) = tail.split_once(' ').unwrap_or((tail, ""));
    (
        status.parse().unwrap_or_else(|_| panic!("no status from curl: {text}")),
        serde_json::from_str(body).unwrap_or(Value::Null),
        ctype.to_string(),
    )
}

/// File an access request of sb1 with `body`.
pub(crate) fn ask(rig: &ConsoleRig, body: &Value) -> (u16, Value) {
    let (status, v, _) = through(rig, "POST", ASK_AT, Some(&body.to_string()));
    (status, v)
}

/// Where a sandbox asks.
pub(crate) const ASK_AT: &str = "http://access.cordon.internal/v1/requests";

/// A request for GET `path` on pay.test, for `lifetime`.
pub(crate) fn for_get(rig: &ConsoleRig, path: &str, lifetime: &str) -> Value {
    serde_json::json!({
        "allow": [{ "host": "pay.test", "ports": [rig.up.addr.port()], "methods": ["GET"], "paths": [path] }],
        "reason": "the task reads the status page",
        "lifetime": lifetime,
    })
}

/// `GET http://pay.test:UP/PATH` through cordon as sb1: its status.
pub(crate) fn get(rig: &ConsoleRig, path: &str) -> u16 {
    through(
        rig,
        "GET",
        &format!("http://pay.test:{}{path}", rig.up.addr.port()),
        None,
    )
    .0
}

/// The agent (`tests/clients/access_agent.py`) asking for GET `path`, in the background, its stdout piped.
pub(crate) fn agent(rig: &ConsoleRig, path: &str) -> Child {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/access_agent.py");
    let up = rig.up.addr.port();
    let rule = serde_json::json!({ "host": "pay.test", "ports": [up], "methods": ["GET"], "paths": [path] });
    std::process::Command::new("python3")
        .arg(script)
        .arg(format!("http://pay.test:{up}{path}"))
        .arg(rule.to_string())
        .arg("10m")
        .env("AGENT_PROXY", format!("http://sb1:tok1@127.0.0.1:{}", rig.proxy))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The access requests as the admin API lists them.
pub(crate) async fn listed(rig: &ConsoleRig) -> Vec<Value> {
    let (status, v) = rig.api("GET", "/v1/access", &rig.token("admin"), "").await;
    assert_eq!(status, 200, "{v}");
    v["requests"].as_array().cloned().unwrap_or_default()
}
