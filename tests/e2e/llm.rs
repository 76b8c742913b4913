//! Model APIs through cordon with the official SDKs (PyPI `openai` and `anthropic`, `tests/clients/llm_agent.py`)
//! against a local server that speaks their wire formats (`tests/servers/model_api.py`, whose token counts are a
//! formula of the request): the sandbox holds a placeholder, cordon injects the key, reads every answer (JSON and
//! event streams, and streams cut short) for the tokens it reports, prices them, records them (`llm:`), counts
//! them in the metrics, and refuses what the rule or a spent budget refuses before it leaves.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::harness::{Case, Spec};
use crate::rigs::tls::TestCa;
use crate::rigs::wait::{TimedChild, Within};

/// The key the server takes (cordon's, never the sandbox's).
pub(crate) const KEY: &str = "sk-real-upstream-key";

/// The model server, stopped when dropped.
pub(crate) struct ModelServer {
    child: Child,
    pub(crate) port: u16,
    /// The name it is reached by, and the address it listens on.
    name: String,
    host: String,
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.timed_wait();
    }
}

impl ModelServer {
    /// Serve both dialects over HTTPS for `names`, with a certificate from `ca`.
    pub(crate) fn start(ca: &TestCa, dir: &std::path::Path, names: &[&str]) -> ModelServer {
        ModelServer::start_on(ca, dir, names, "127.0.0.1")
    }

    /// [`ModelServer::start`] on the address `host`.
    pub(crate) fn start_on(ca: &TestCa, dir: &std::path::Path, names: &[&str], host: &str) -> ModelServer {
        let (cert, key) = ca.pem_pair(names);
        let (cert_path, key_path) = (dir.join("model-cert.pem"), dir.join("model-key.pem"));
        std::fs::write(&cert_path, cert).unwrap();
        std::fs::write(&key_path, key).unwrap();
        let mut child = Command::new("python3")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/model_api.py"))
            .args(["--host", host, "--port", "0", "--key", KEY, "--tls-cert"])
            .arg(&cert_path)
            .arg("--tls-key")
            .arg(&key_path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 tests/servers/model_api.py");
        let line = crate::rigs::wait::first_line(&mut child, "the model API server", Duration::from_secs(60));
        let port = line
            .trim()
            .strip_prefix("READY ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the model API server said {line:?}"));
        ModelServer {
            child,
            port,
            name: names[0].to_owned(),
            host: host.to_owned(),
        }
    }

    /// What reached the server, through its own listing (plain `GET /_seen` over TLS, not through cordon).
    pub(crate) fn seen(&self, ca_file: &std::path::Path) -> Vec<Value> {
        let out = Command::new("curl")
            .args(["-s", "--max-time", "10", "--cacert"])
            .arg(ca_file)
            .args(["--resolve", &format!("{}:{}:{}", self.name, self.port, self.host)])
            .arg(format!("https://{}:{}/_seen", self.name, self.port))
            .timed_output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stdout)))
    }
}

/// Prices per million tokens: round figures, so a cost is a sum a test can write.
pub(crate) const PRICES: &str = "model_prices:\n  \"gpt-test*\": { input: 1, output: 2, cached_input: 0.5 }\n  \
     \"claude-test\": { input: 3, output: 15, cached_input: 0.3, cache_write: 3.75 }\n";

/// The two rules: each host a model API of its dialect, its model calls only.
pub(crate) fn rules(port: u16, models: &str) -> String {
    format!(
        "      - host: api.openai.test\n        ports: [{port}]\n        methods: [POST]\n        \
         paths: [/v1/chat/completions, /v1/responses, /v1/embeddings]\n        \
         model_api: {{ dialect: openai{models} }}\n      \
         - host: api.anthropic.test\n        ports: [{port}]\n        methods: [POST]\n        paths: [/v1/messages]\n        \
         model_api: {{ dialect: anthropic }}\n"
    )
}

/// Credentials `openai` and `anthropic`, each the server's key, injected for the sandbox's placeholder.
fn credentials(port: u16) -> String {
    let mut c = String::new();
    for name in ["openai", "anthropic"] {
        c.push_str(&format!(
            "  {name}:\n    source: {{ env: {} }}\n    bind: {{ hosts: [api.{name}.test], ports: [{port}] }}\n    \
             inject: {{ placeholder: {{}} }}\n",
            name.to_uppercase() + "_KEY"
        ));
    }
    c
}

/// A case: the server and cordon with `policy` (model budget lines) and `models` (`, models: [...]` or nothing).
pub(crate) async fn case(policy: &str, models: &str) -> (Case, ModelServer, tempfile::TempDir) {
    let ca = Case::ca();
    let scratch = tempfile::tempdir().unwrap();
    let server = ModelServer::start(&ca, scratch.path(), &["api.openai.test", "api.anthropic.test"]);
    std::fs::write(scratch.path().join("ca.pem"), &ca.pem).unwrap();
    let spec = Spec {
        rules: rules(server.port, models),
        credentials: credentials(server.port),
        policy_credentials: vec!["openai", "anthropic"],
        secrets: vec![("OPENAI_KEY", KEY), ("ANTHROPIC_KEY", KEY)],
        names: vec!["api.openai.test", "api.anthropic.test"],
        top: PRICES.into(),
        policy: policy.into(),
    };
    (Case::start(ca, spec).await, server, scratch)
}

/// One call of the agent's, as the SDK saw it: `sdk`, `api`, whether streamed, the model, the prompt, max tokens.
pub(crate) fn call(
    case: &Case,
    port: u16,
    (sdk, api, stream): (&str, &str, bool),
    model: &str,
    prompt: &str,
    max: u32,
) -> Command {
    let placeholder = case
        .env
        .get(&format!("CORDON_PLACEHOLDER_{}", sdk.to_uppercase()))
        .unwrap_or_else(|| panic!("no placeholder for {sdk} in {:?}", case.env.keys()))
        .clone();
    assert_ne!(placeholder, KEY);
    let base = match sdk {
        "openai" => format!("https://api.openai.test:{port}/v1"),
        _ => format!("https://api.anthropic.test:{port}"),
    };
    let mut c = case.client("python3");
    c.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/llm_agent.py"))
        .args([
            "--sdk",
            sdk,
            "--api",
            api,
            "--model",
            model,
            "--base-url",
            &base,
            "--api-key",
            &placeholder,
        ])
        .args(["--prompt", prompt, "--max-tokens", &max.to_string(), "--timeout", "30"]);
    if stream {
        c.arg("--stream");
    }
    c.stdin(Stdio::null());
    c
}

/// Run `c` and read the one JSON line the agent prints.
pub(crate) fn said(mut c: Command) -> Value {
    parse(&c.timed_output().unwrap())
}

/// The one JSON line an agent printed.
pub(crate) fn parse(out: &std::process::Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().unwrap_or(""))
        .unwrap_or_else(|_| panic!("the agent said {text:?} {}", String::from_utf8_lossy(&out.stderr)))
}

/// Run every command at once and read what each agent said, in order.
pub(crate) async fn said_all(cs: Vec<Command>) -> Vec<Value> {
    let runs: Vec<_> = cs
        .into_iter()
        .map(|c| tokio::task::spawn_blocking(move || said(c)))
        .collect();
    let mut out = Vec::new();
    for r in runs {
        out.push(r.await.unwrap());
    }
    out
}

/// The `llm` section of the record of the call whose prompt has `word`.
async fn llm_of(case: &Case, path: &str, nth: usize) -> Value {
    let recs = {
        let mut found = Vec::new();
        for _ in 0..100 {
            found = case
                .audit()
                .into_iter()
                .filter(|r| r["path"] == path && r["llm"].is_object())
                .collect();
            if found.len() > nth && found.iter().all(|r| r["llm"].get("input_tokens").is_some()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        found
    };
    recs.get(nth)
        .unwrap_or_else(|| panic!("no llm record {nth} for {path}: {:#?}", case.audit()))["llm"]
        .clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn both_sdks_streaming_and_not_are_counted_priced_and_recorded_as_the_provider_reported() {
    let (case, server, scratch) = case("", "").await;
    let p = server.port;
    // "cached" adds 3 cached input tokens, "cachewrite" 5 written to Anthropic's cache (the server's formula).
    let prompt = "one two cached";
    let calls = vec![
        call(&case, p, ("openai", "chat", false), "gpt-test-1", prompt, 5),
        call(&case, p, ("openai", "chat", true), "gpt-test-1", prompt, 7),
        call(&case, p, ("openai", "responses", false), "gpt-test-1", prompt, 5),
        call(&case, p, ("openai", "responses", true), "gpt-test-1", prompt, 9),
        call(&case, p, ("openai", "embeddings", false), "gpt-test-embed", prompt, 1),
        call(
            &case,
            p,
            ("anthropic", "messages", false),
            "claude-test",
            "one two cached cachewrite",
            5,
        ),
        call(
            &case,
            p,
            ("anthropic", "messages", true),
            "claude-test",
            "one two cached cachewrite",
            6,
        ),
    ];
    let said = said_all(calls).await;
    for s in &said {
        assert_eq!(s["ok"], true, "{s}");
    }
    // The key reached the server; the placeholder never did.
    for seen in server.seen(&scratch.path().join("ca.pem")) {
        let auth = seen["headers"]["authorization"][0].as_str().unwrap_or("");
        assert_eq!(auth, format!("Bearer {KEY}"), "{seen}");
        // The SDKs ask for compressed answers; cordon asks for none, so that it reads what it counts.
        assert!(seen["headers"].get("accept-encoding").is_none(), "{seen}");
    }
    // W = 3 words, C = 3 cached: OpenAI's input is W + C = 6, of which 3 cached. Costs per million tokens, in
    // millionths: (3 × 1 + 3 × 0.5) + output × 2.
    let openai = |out: u64| json!({"input_tokens": 6, "output_tokens": out, "cached_input_tokens": 3, "cost": (4.5 + out as f64 * 2.0).ceil() / 1e6});
    let chat = [
        llm_of(&case, "/v1/chat/completions", 0).await,
        llm_of(&case, "/v1/chat/completions", 1).await,
    ];
    let mut outs: Vec<u64> = chat.iter().map(|l| l["output_tokens"].as_u64().unwrap()).collect();
    outs.sort();
    assert_eq!(outs, [5, 7], "{chat:#?}");
    for l in &chat {
        let out = l["output_tokens"].as_u64().unwrap();
        assert_eq!(l["model"], "gpt-test-1");
        assert_eq!(l["dialect"], "openai");
        for k in ["input_tokens", "output_tokens", "cached_input_tokens", "cost"] {
            assert_eq!(l[k], openai(out)[k], "{k}: {l}");
        }
        assert!(l.get("estimated").is_none(), "{l}");
    }
    let responses = [
        llm_of(&case, "/v1/responses", 0).await,
        llm_of(&case, "/v1/responses", 1).await,
    ];
    let mut outs: Vec<u64> = responses.iter().map(|l| l["output_tokens"].as_u64().unwrap()).collect();
    outs.sort();
    assert_eq!(outs, [5, 9], "{responses:#?}");
    let embed = llm_of(&case, "/v1/embeddings", 0).await;
    assert_eq!(
        (embed["input_tokens"].as_u64(), embed["output_tokens"].as_u64()),
        (Some(3), Some(0)),
        "{embed}"
    );
    // Anthropic: W = 4, C = 3 read, CW = 5 written: input 12; cost 4 × 3 + 3 × 0.3 + 5 × 3.75 + out × 15.
    for nth in 0..2 {
        let l = llm_of(&case, "/v1/messages", nth).await;
        let out = l["output_tokens"].as_u64().unwrap();
        assert!(out == 5 || out == 6, "{l}");
        assert_eq!(l["input_tokens"], 12, "{l}");
        assert_eq!(l["cached_input_tokens"], 3, "{l}");
        assert_eq!(l["cache_write_tokens"], 5, "{l}");
        let cost = (12.0 + 0.9 + 18.75 + out as f64 * 15.0).ceil() / 1e6;
        assert!((l["cost"].as_f64().unwrap() - cost).abs() < 1e-12, "{l} {cost}");
    }
    // The metrics count the same tokens, by model.
    let metrics = reqwest_metrics(&case);
    assert!(
        metrics.contains("cordon_model_tokens_total{model=\"gpt-test-1\",kind=\"output\"} 26"),
        "{metrics}"
    );
    assert!(
        metrics.contains("cordon_model_tokens_total{model=\"claude-test\",kind=\"input\"} 24"),
        "{metrics}"
    );
    crate::rigs::audit::assert_schema(&case.path("audit.log"));
    // The admin API (and the console, from it) shows the sandbox's spend on this replica.
    let shown: Value = serde_json::from_str(&case.admin(&["sandbox", "show", &case.sandbox])).unwrap();
    let spend = &shown["model_spend"];
    assert_eq!(spend["calls"], 7, "{shown}");
    assert_eq!(spend["output_tokens"], 5 + 7 + 5 + 9 + 5 + 6, "{shown}");
}

/// `/metrics` of the case's cordon.
fn reqwest_metrics(case: &Case) -> String {
    let out = Command::new("curl")
        .args(["-s", "--max-time", "10", &format!("{}/metrics", case.admin)])
        .timed_output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_cut_short_is_counted_by_what_was_delivered_never_as_nothing() {
    let (case, server, _scratch) = case("", "").await;
    let p = server.port;
    let said = said_all(vec![
        call(&case, p, ("openai", "chat", true), "gpt-test-1", "cutshort now", 200),
        call(
            &case,
            p,
            ("openai", "responses", true),
            "gpt-test-1",
            "cutshort now",
            200,
        ),
        call(
            &case,
            p,
            ("anthropic", "messages", true),
            "claude-test",
            "cutshort now",
            200,
        ),
    ])
    .await;
    for s in &said {
        assert_eq!(s["ok"], false, "the stream was cut: {s}");
    }
    // 100 of the 200 deltas were delivered before the server hung up.
    for path in ["/v1/chat/completions", "/v1/responses"] {
        let l = llm_of(&case, path, 0).await;
        assert_eq!(l["estimated"], true, "{l}");
        assert_eq!(l["output_tokens"], 100, "{path}: {l}");
        // No usage came: the input is estimated from the request's body (a token per four bytes), never 0.
        assert!(l["input_tokens"].as_u64().unwrap() > 2, "{l}");
        assert!(l["cost"].as_f64().unwrap() > 0.0, "{l}");
    }
    // Anthropic said its input in message_start: that is kept; the output is what was delivered.
    let l = llm_of(&case, "/v1/messages", 0).await;
    assert_eq!(
        (l["input_tokens"].as_u64(), l["output_tokens"].as_u64()),
        (Some(2), Some(100)),
        "{l}"
    );
    assert_eq!(l["estimated"], true, "{l}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_the_rule_does_not_list_never_leaves() {
    let (case, server, scratch) = case("", ", models: [gpt-test-1, \"gpt-test-mini*\"]").await;
    let p = server.port;
    let said = said_all(vec![
        call(&case, p, ("openai", "chat", false), "gpt-test-2", "hi", 3),
        call(&case, p, ("openai", "chat", false), "GPT-TEST-1", "hi", 3),
        call(&case, p, ("openai", "responses", true), "gpt-test-mini-2", "hi", 3),
        call(&case, p, ("openai", "chat", false), "gpt-test-1", "hi", 3),
    ])
    .await;
    for s in &said[..2] {
        assert_eq!(s["status"], 403, "{s}");
        assert_eq!(s["error"]["reason"], "model_not_allowed", "{s}");
    }
    assert_eq!(said[2]["ok"], true, "{}", said[2]);
    assert_eq!(said[3]["ok"], true, "{}", said[3]);
    let models: Vec<String> = server
        .seen(&scratch.path().join("ca.pem"))
        .iter()
        .map(|s| s["body"]["model"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        !models.iter().any(|m| m == "gpt-test-2" || m == "GPT-TEST-1"),
        "{models:?}"
    );
    // What cannot be read as a model call is refused, in every shape, and never sent.
    let proxy = case.env["HTTPS_PROXY"].clone();
    let ca = case.env["SSL_CERT_FILE"].clone();
    for (body, coding) in [
        ("not json", None),
        ("[1, 2]", None),
        ("{\"messages\": []}", None),
        ("{\"model\": 4}", None),
        ("{\"model\": \"\"}", None),
        ("{\"model\": \"gpt-test-1\"}", Some("gzip")),
    ] {
        let mut c = Command::new("curl");
        c.args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code} %header{x-cordon-reason}",
            "--max-time",
            "10",
        ])
        .args([
            "-x",
            &proxy,
            "--cacert",
            &ca,
            "-H",
            "content-type: application/json",
            "--data-binary",
            body,
        ])
        .arg(format!("https://api.openai.test:{p}/v1/chat/completions"));
        if let Some(coding) = coding {
            c.args(["-H", &format!("content-encoding: {coding}")]);
        }
        let out = c.timed_output().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "400 model_api_invalid",
            "{body} {coding:?}"
        );
    }
    assert_eq!(server.seen(&scratch.path().join("ca.pem")).len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spent_budget_lets_the_crossing_answer_finish_and_refuses_the_next() {
    let (case, server, _scratch) = case("    model_budget:\n      sandbox: { tokens: 150, per: 1h }\n", "").await;
    let p = server.port;
    // 3 input + 100 output: under the budget.
    let first = said(call(&case, p, ("openai", "chat", true), "gpt-test-1", "a b c", 100));
    assert_eq!(first["ok"], true, "{first}");
    // 103 used: still under; this stream of 100 crosses it and is let finish whole.
    let crossing = said(call(
        &case,
        p,
        ("anthropic", "messages", true),
        "claude-test",
        "a b c",
        100,
    ));
    assert_eq!(crossing["ok"], true, "{crossing}");
    assert_eq!(crossing["usage"]["output_tokens"], 100, "{crossing}");
    // Counted: the next is refused before it leaves, with when to come back, in either dialect.
    for sdk in ["openai", "anthropic"] {
        let api = if sdk == "openai" { "chat" } else { "messages" };
        let model = if sdk == "openai" { "gpt-test-1" } else { "claude-test" };
        let mut next = Value::Null;
        for _ in 0..40 {
            next = said(call(&case, p, (sdk, api, false), model, "again", 1));
            if next["status"] == 429 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(next["status"], 429, "{next}");
        assert_eq!(next["error"]["reason"], "model_budget_spent", "{next}");
        assert!(
            next["error"]["message"].as_str().unwrap().contains("206 of 150 tokens"),
            "{next}"
        );
    }
    let refused = case.audited(|r| r["reason"] == "model_budget_spent").await;
    assert_eq!(refused["status"], 429);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spent_budget_with_on_spent_ask_holds_the_call_for_a_person() {
    let (case, server, _scratch) = case(
        "    model_budget:\n      user: { cost: 0.000001, per: 1d }\n      on_spent: ask\n",
        "",
    )
    .await;
    let p = server.port;
    let first = said(call(&case, p, ("openai", "chat", false), "gpt-test-1", "a b", 4));
    assert_eq!(first["ok"], true, "{first}");
    // Spent: the next call waits for a person, who sees what was spent and lets it through; it is counted too.
    let run = tokio::task::spawn_blocking({
        let mut c = call(&case, p, ("openai", "chat", false), "gpt-test-1", "a b", 4);
        move || c.timed_output().unwrap()
    });
    let (held, run) = case.held(run).await;
    let what = held.to_string();
    assert!(what.contains("model budget is spent"), "{held}");
    case.reviewer(&["approvals", "allow", held["id"].as_str().unwrap()]);
    let second = parse(&run.await.unwrap());
    assert_eq!(second["ok"], true, "{second}");
    // A person who says no: 403, as any refusal of an HTTP API reads.
    let run = tokio::task::spawn_blocking({
        let mut c = call(&case, p, ("openai", "chat", false), "gpt-test-1", "a b", 4);
        move || c.timed_output().unwrap()
    });
    let (held, run) = case.held(run).await;
    case.reviewer(&["approvals", "deny", held["id"].as_str().unwrap()]);
    let third = parse(&run.await.unwrap());
    assert_eq!(third["status"], 403, "{third}");
    assert_eq!(third["error"]["reason"], "approval_denied", "{third}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cost_budget_refuses_a_model_it_cannot_price() {
    let (case, server, _scratch) = case("    model_budget:\n      sandbox: { cost: 5 }\n", "").await;
    let said = said(call(
        &case,
        server.port,
        ("openai", "chat", false),
        "o-unpriced",
        "hi",
        2,
    ));
    assert_eq!(said["status"], 403, "{said}");
    assert_eq!(said["error"]["reason"], "model_unpriced", "{said}");
}
