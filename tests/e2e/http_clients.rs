//! curl (HTTP/2) and Python requests (a JSON API, with the sandbox's placeholder swapped for the real token).

use super::harness::{API_TOKEN, placeholder_api, text};
use crate::rigs::wait::Within;

#[tokio::test(flavor = "multi_thread")]
async fn curl_over_http2_and_requests_with_a_placeholder_swapped() {
    let (api, case) = placeholder_api().await;
    let placeholder = case
        .env
        .get("CORDON_PLACEHOLDER_API")
        .expect("the env carries the placeholder")
        .clone();
    assert_ne!(placeholder, API_TOKEN);

    // curl, HTTP/2 inside the interception, the placeholder in a header.
    let out = case
        .client("curl")
        .args(["-sS", "--http2", "-w", "\\n%{http_version}", "-H"])
        .arg(format!("Authorization: Bearer {placeholder}"))
        .arg(api.url("/v1/curl"))
        .timed_output()
        .unwrap();
    let got = text(&out);
    assert!(out.status.success(), "{got}");
    assert!(got.contains("\"ok\":true") && got.trim_end().ends_with('2'), "{got}");

    // Python requests, reading the placeholder from its environment like an SDK would.
    let script = r#"
import os, requests
r = requests.get(os.environ["URL"], headers={"Authorization": "Bearer " + os.environ["CORDON_PLACEHOLDER_API"]}, timeout=10)
print(r.status_code, r.json()["ok"])
"#;
    let out = case
        .client("python3")
        .args(["-c", script])
        .env("URL", api.url("/v1/requests"))
        .timed_output()
        .unwrap();
    assert_eq!(text(&out).trim(), "200 True", "{}", text(&out));
    // The real token reached the API; the sandbox never had it.
    assert!(
        api.seen()
            .iter()
            .all(|s| s.header("authorization") == Some(format!("Bearer {API_TOKEN}").as_str()))
    );

    // A denied destination: each tool shows cordon's refusal.
    let out = case
        .client("curl")
        .args(["-sS", "https://denied.e2e.test/"])
        .timed_output()
        .unwrap();
    let got = text(&out);
    assert!(!out.status.success());
    assert!(got.contains("CONNECT tunnel failed, response 403"), "curl shows: {got}");
    let script = r#"
import requests
try:
    requests.get("https://denied.e2e.test/", timeout=10)
except requests.exceptions.ProxyError as e:
    print("refused:", e)
"#;
    let out = case.client("python3").args(["-c", script]).timed_output().unwrap();
    let got = text(&out);
    assert!(got.contains("refused:") && got.contains("403"), "requests shows: {got}");
    case.audited(|r| {
        r["host"] == "denied.e2e.test" && r["decision"] == "deny" && r["sandbox"] == case.sandbox.as_str()
    })
    .await;
}
