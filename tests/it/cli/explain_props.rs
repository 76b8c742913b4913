//! `cordon explain` and live traffic decide alike for requests nobody wrote down (issue 55, item 2): random
//! requests, drawn from a grammar of what a sandbox can send (both sandboxes, methods in every case, every host
//! of the policy and some it does not name, cordon's own listener among them, ports in and out of the rules, and
//! paths built from allowed, encoded, dotted, malformed and case-changed segments), each explained (`--json`) and
//! then sent live through the proxy with curl. Every exchange must end live as explain said: kind, decision,
//! reason, rule, credentials and status. The draw is seeded and the seed printed, so a failure can be run again
//! (`CORDON_EXPLAIN_SEED=N`).

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use super::explain_live::{differences, in_order, start};

/// How many requests one run draws.
const CASES: usize = 40;

/// One request: (sandbox, method, URL).
fn request(u: u16, p: u16, o: u16, own: u16) -> impl Strategy<Value = (String, String, String)> {
    let sandbox = prop_oneof![Just("s"), Just("r")];
    let method = prop::sample::select(vec!["GET", "get", "Get", "POST", "DELETE", "delete", "PATCH", "PUT"]);
    let origin = prop::sample::select(vec![
        format!("https://api.allowed.test:{u}"),
        format!("https://API.Allowed.Test.:{u}"),
        format!("https://api.allowed.test:{o}"),
        format!("https://www.allowed.test:{u}"),
        format!("https://denied.test:{u}"),
        format!("http://plain.allowed.test:{p}"),
        format!("http://plain.allowed.test:{o}"),
        format!("http://denied.test:{p}"),
        // cordon's own listener: a rule allows 127.0.0.1, the guard refuses it (403 self_address).
        format!("http://127.0.0.1:{own}"),
        format!("https://127.0.0.1:{own}"),
    ]);
    let segment = prop::sample::select(vec![
        "v1", "V1", "public", "private", "admin", "items", "models", "3", "%2e%2e", "%2E%2E", "..%2F", ".", "a%2Fb",
        "%zz", "%7Euser", "%761", "x",
    ]);
    let path = prop::collection::vec(segment, 0..4).prop_map(|segs| format!("/{}", segs.join("/")));
    (sandbox, method, origin, path).prop_map(|(s, m, o, p)| (s.to_string(), m.to_string(), format!("{o}{p}")))
}

#[tokio::test(flavor = "multi_thread")]
async fn explain_and_live_traffic_decide_random_requests_alike() {
    let rig = start().await;
    let seed: u64 = std::env::var("CORDON_EXPLAIN_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand_seed);
    println!("explain_props: seed {seed} (run again with CORDON_EXPLAIN_SEED={seed})");
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
    let strategy = request(rig.tls.addr.port(), rig.plain.addr.port(), rig.other, rig.port);
    let mut seen = 0;
    let mut failures = Vec::new();
    let mut verdicts = std::collections::BTreeMap::<String, usize>::new();
    for _ in 0..CASES {
        let (sandbox, method, url) = strategy.new_tree(&mut runner).unwrap().current();
        let (code, explained) = rig.explain(&sandbox, &method, &url);
        let (status, records) = rig.live(&sandbox, &method, &url, &mut seen).await;
        let reason = explained["exchanges"]
            .as_array()
            .and_then(|e| e.iter().rev().find_map(|x| x["reason"].as_str()))
            .unwrap_or("-")
            .to_string();
        *verdicts
            .entry(format!("{} {reason}", explained["verdict"].as_str().unwrap_or("?")))
            .or_default() += 1;
        let mut wrong = differences(&explained, status, &in_order(records.clone()));
        let allowed = explained["verdict"] == "allow";
        if code != if allowed { 0 } else { 1 } {
            wrong.push(format!("explain exited {code} for verdict {}", explained["verdict"]));
        }
        if !wrong.is_empty() {
            failures.push(format!(
                "{sandbox} {method} {url}:\n  {}\n  records: {records:?}",
                wrong.join("\n  ")
            ));
        }
    }
    println!("explain_props: {CASES} requests, by verdict and reason: {verdicts:?}");
    assert!(
        failures.is_empty(),
        "explain and live traffic part (seed {seed}):\n{}",
        failures.join("\n")
    );
}

/// A seed for this run.
fn rand_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(55)
}
