//! Credential usage budgets through the binary, under load: of 80 requests sent at once by 8 clients, exactly the
//! budgeted 40 reach the upstream carrying the credential and the other 40 are refused 429 `credential_budget`
//! with `Retry-After`; another sandbox's budget is its own; the first refusal is counted and announced once. A
//! policy's byte budget per user: the exchange that crosses it completes, the next one is refused.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::rigs::control::admin_request;
use crate::rigs::replicas::{Replica, create, curl_head, replica_with, upstream};
use crate::rigs::wait::Within;
use crate::rigs::webhook::{SECRET, receiver};

const TOKEN: &str = "upstream-token-4d1c9e";

/// A cordon whose `up-token` (an Authorization header for allowed.test) has a budget of 40 requests an hour per
/// sandbox; policy `everything` (sandbox `sb2` of user bob) overrides it with 150,000 bytes an hour per user.
async fn cordon(d: &Path, up: u16, hook: u16) -> Replica {
    std::fs::write(d.join("hook-secret"), SECRET).unwrap();
    std::fs::write(d.join("up-token"), TOKEN).unwrap();
    let top = format!(
        "approval:\n  webhook: {{ url: \"http://127.0.0.1:{hook}/hook\", secret: {{ file: {d}/hook-secret }} }}\n\
         limits: {{ per_sandbox: {{ requests: {{ per_second: 100000, burst: 100000 }} }}, per_user: {{ requests: \
         {{ per_second: 100000, burst: 100000 }} }} }}\n\
         credentials:\n  up-token:\n    source: {{ file: {d}/up-token }}\n    bind: {{ hosts: [allowed.test], ports: \
         [{up}] }}\n    inject: {{ header: Authorization, value: \"Bearer {{secret}}\" }}\n    budget: {{ requests: 40, \
         window: 1h }}\n",
        d = d.display()
    );
    replica_with(d, "b", up, false, &top, |yaml| {
        yaml.replace(
            "  web:\n    allow:\n",
            "  web:\n    credentials: [up-token]\n    allow:\n",
        )
        .replace(
            "  everything:\n    mode: report\n    allow: []\n",
            "  everything:\n    credentials: [up-token]\n    credential_budget: { up-token: { bytes: 150000, per: \
                 user } }\n    allow:\n      - { host: allowed.test, ports: [{UP}] }\n",
        )
        .replace("{UP}", &up.to_string())
    })
    .await
}

/// curl through `r` as `who` with `ca`: (status, x-cordon-reason, retry-after).
fn get(r: &Replica, who: (&str, &str), ca: &Path, url: &str) -> (u16, String, String) {
    let head = curl_head(r, who, Some(ca), url);
    (
        head.status(),
        head.header("x-cordon-reason"),
        head.header("retry-after"),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn exactly_the_budget_passes_under_load_and_another_sandbox_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let up = upstream(d).await;
    let port = up.addr.port();
    let (hook, mut hooks) = receiver().await;
    let r = Arc::new(cordon(d, port, hook).await);
    let (a, a_cred, a_ca) = create(&r, d).await;
    let (b, b_cred, b_ca) = create(&r, d).await;
    let url = format!("https://allowed.test:{port}/hello");

    let mut clients = Vec::new();
    for _ in 0..8 {
        let (r, a, a_cred, a_ca, url) = (r.clone(), a.clone(), a_cred.clone(), a_ca.clone(), url.clone());
        clients.push(tokio::task::spawn_blocking(move || {
            (0..10).map(|_| get(&r, (&a, &a_cred), &a_ca, &url)).collect::<Vec<_>>()
        }));
    }
    let mut answers = Vec::new();
    for c in clients {
        answers.extend(c.await.unwrap());
    }
    let ok = answers.iter().filter(|(s, _, _)| *s == 200).count();
    let refused: Vec<_> = answers.iter().filter(|(s, _, _)| *s == 429).collect();
    assert_eq!((ok, refused.len()), (40, 40), "{answers:?}");
    for (_, reason, retry) in &refused {
        assert_eq!(reason, "credential_budget");
        let retry: u64 = retry.parse().unwrap();
        assert!((1..=3600).contains(&retry), "{retry}");
    }
    let carried = up
        .seen()
        .iter()
        .filter(|s| s.header("authorization") == Some(&format!("Bearer {TOKEN}")))
        .count();
    assert_eq!(
        carried, 40,
        "the upstream saw the credential exactly as often as the budget allows"
    );
    // Another sandbox of the same policy has a budget of its own.
    assert_eq!(get(&r, (&b, &b_cred), &b_ca, &url).0, 200);

    // The first refusal is announced once, counted once; every refusal is counted as a request.
    let (event, body) = tokio::time::timeout(Duration::from_secs(10), hooks.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(event, "credential.budget_spent");
    assert_eq!(
        (&body["sandbox"], &body["credential"], &body["requests"]),
        (&Value::from(a.clone()), &Value::from("up-token"), &Value::from(40))
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(hooks.try_recv().is_err(), "announced once per window");
    let (_, _, metrics) = admin_request(r.admin_addr(), "GET", "/metrics", None, "").await;
    assert!(
        metrics.contains("cordon_credential_budgets_spent_total{credential=\"up-token\"} 1"),
        "{metrics}"
    );
    let refusals: u64 = metrics
        .lines()
        .filter(|l| l.starts_with("cordon_requests_total{") && l.contains("reason=\"credential_budget\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum();
    assert_eq!(refusals, 40, "{metrics}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_policys_byte_budget_per_user_lets_the_crossing_exchange_finish_and_refuses_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let up = upstream(d).await;
    let port = up.addr.port();
    let (hook, _hooks) = receiver().await;
    let r = cordon(d, port, hook).await;
    let ca = d.join("sb2-ca.pem");
    let out = std::process::Command::new(crate::rigs::process::BIN)
        .args(["ca", "export", "--sandbox", "sb2", "--config"])
        .arg(&r.path)
        .timed_output()
        .unwrap();
    std::fs::write(&ca, out.stdout).unwrap();
    // /big answers 100,000 bytes: the first two fit under 150,000 when they start, the second crosses it.
    let big = format!("https://allowed.test:{port}/big");
    // (A moment between them: an exchange's bytes are added when its record is written, as its body ends.)
    assert_eq!(get(&r, ("sb2", "tok2"), &ca, &big).0, 200);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(get(&r, ("sb2", "tok2"), &ca, &big).0, 200);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (status, reason, _) = get(&r, ("sb2", "tok2"), &ca, &big);
    assert_eq!((status, reason.as_str()), (429, "credential_budget"));
}
