//! A model budget across two replicas sharing PostgreSQL, through the binary and the official Anthropic SDK:
//! concurrent streams through both replicas against one sandbox's token budget. Admission is one conditional
//! update in the store, so every call admitted was admitted while the budget was not yet spent; the streams in
//! flight then finish and are counted whole, and from then on every replica refuses. The over-spend is what was
//! in flight, which the test measures and holds to its bound (docs/src/model-apis.md states it).

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::e2e::llm::{KEY, ModelServer, parse};
use crate::rigs::replicas::{Replica, Setup, create, pg_replica_edit, setup};
use crate::rigs::tls::test_ca;
use crate::rigs::wait::Within;

/// Input tokens of each call ("a b c": three words), output tokens of each stream.
const INPUT: u64 = 3;
const OUTPUT: u64 = 200;
/// The sandbox's budget.
const BUDGET: u64 = 500;
/// Streams at once, half through each replica.
const STREAMS: usize = 6;

/// The agent's call through `r` as sandbox `id` (proxy credential `cred`, CA `ca`): a stream of `OUTPUT` tokens,
/// `delay_ms` between events so that the streams overlap.
fn agent(r: &Replica, id: &str, cred: &str, ca: &std::path::Path, port: u16, delay_ms: u32) -> Command {
    let mut c = Command::new("python3");
    c.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HTTPS_PROXY", format!("http://{id}:{cred}@127.0.0.1:{}", r.proxy))
        .env("SSL_CERT_FILE", ca)
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/llm_agent.py"))
        .args([
            "--sdk",
            "anthropic",
            "--api",
            "messages",
            "--stream",
            "--model",
            "claude-test",
        ])
        .args(["--base-url", &format!("https://allowed.test:{port}"), "--api-key", KEY])
        .args([
            "--prompt",
            "a b c",
            "--max-tokens",
            &OUTPUT.to_string(),
            "--timeout",
            "60",
        ])
        .args(["--header", &format!("x-model-api-delay-ms:{delay_ms}")])
        .stdin(Stdio::null());
    c
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_budget_holds_across_replicas_within_what_was_in_flight() {
    let Setup { pg, dir, _up, .. } = setup().await;
    let model_ca = test_ca("model API test CA");
    std::fs::write(dir.path().join("model-ca.pem"), &model_ca.pem).unwrap();
    let server = ModelServer::start_on(&model_ca, dir.path(), &["allowed.test"], "127.0.0.2");
    let port = server.port;
    let d = dir.path().display().to_string();
    let edit = move |yaml: String| {
        yaml.replace(
            &format!("extra_roots: [{d}/upstream-ca.pem]"),
            &format!("extra_roots: [{d}/upstream-ca.pem, {d}/model-ca.pem]"),
        )
        .replace(
            "  web:\n    allow:\n",
            &format!(
                "  web:\n    model_budget:\n      sandbox: {{ tokens: {BUDGET}, per: 1h }}\n    allow:\n      \
                 - host: allowed.test\n        ports: [{port}]\n        model_api: {{ dialect: anthropic }}\n"
            ),
        )
    };
    let a = pg_replica_edit(&pg, dir.path(), "a", port, edit.clone()).await;
    let b = pg_replica_edit(&pg, dir.path(), "b", port, edit).await;
    let (id, cred, ca) = create(&a, dir.path()).await;

    // Every stream starts before any ends (200 events, 20 ms apart): all are admitted, the budget not yet spent.
    let runs: Vec<_> = (0..STREAMS)
        .map(|i| {
            let mut c = agent(if i % 2 == 0 { &a } else { &b }, &id, &cred, &ca, port, 20);
            tokio::task::spawn_blocking(move || parse(&c.timed_output().unwrap()))
        })
        .collect();
    let mut said: Vec<Value> = Vec::new();
    for r in runs {
        said.push(r.await.unwrap());
    }
    let passed = said.iter().filter(|s| s["ok"] == true).count() as u64;
    assert!(passed >= 1, "{said:#?}");
    for s in said.iter().filter(|s| s["ok"] != true) {
        assert_eq!(s["error"]["reason"], "model_budget_spent", "{s}");
    }
    // What the store holds is what passed, counted whole.
    let mut used = 0;
    for _ in 0..50 {
        used = pg
            .psql("SELECT coalesce(sum(tokens), 0) FROM model_budgets WHERE key LIKE 'sandbox:%'")
            .trim()
            .parse::<u64>()
            .unwrap_or(0);
        if used == passed * (INPUT + OUTPUT) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(used, passed * (INPUT + OUTPUT), "{said:#?}");
    // The bound: every call admitted found the budget unspent, so the over-spend is at most what was in flight
    // besides the one that crossed: (streams - 1) answers.
    let over = used.saturating_sub(BUDGET);
    assert!(over <= (STREAMS as u64 - 1) * (INPUT + OUTPUT), "over-spend {over}");
    eprintln!(
        "model budget across replicas: {passed} of {STREAMS} concurrent streams passed, {used} tokens used of {BUDGET}, over-spend {over}"
    );
    // Spent: both replicas refuse the next, at once.
    for r in [&a, &b] {
        let next = parse(&agent(r, &id, &cred, &ca, port, 0).timed_output().unwrap());
        assert_eq!(next["status"], 429, "{next}");
        assert_eq!(next["error"]["reason"], "model_budget_spent", "{next}");
    }
}
