//! The monitoring that ships with cordon (deploy/monitoring/) names only metrics cordon has: every `cordon_*`
//! name in the alert rules, their tests and the Grafana dashboard is a family cordon registers (a counter's
//! `_total`, a histogram's `_bucket`, `_sum` and `_count`, a unit's suffix read as their family). A family with no
//! series yet (no request refused, no token minted) is not in /metrics at all, so the registered families are
//! read from the registry's source (`src/metrics.rs`, `src/metrics/`), and checked against a running cordon's
//! /metrics: every family it declares is one of them. That the rules and queries are valid PromQL, and the
//! alerts fire as their tests say, is .ci/monitoring.sh's (promtool).

use crate::rigs::wait::TimedChild;
use std::collections::BTreeSet;

/// Every `cordon_...` name in `text`.
fn named(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("cordon_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        out.insert(tail[..end].to_owned());
        rest = &tail[end..];
    }
    out
}

/// The family a sample's name belongs to, and the same without a unit's suffix (`register_with_unit`).
fn family(name: &str) -> [&str; 2] {
    let f = ["_total", "_bucket", "_sum", "_count", "_created"]
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .unwrap_or(name);
    let bare = ["_seconds", "_bytes"]
        .iter()
        .find_map(|u| f.strip_suffix(u))
        .unwrap_or(f);
    [f, bare]
}

/// The metric names the registry's source registers.
fn registered() -> BTreeSet<String> {
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
    let mut files = vec![std::path::PathBuf::from(format!("{src}/metrics.rs"))];
    for entry in std::fs::read_dir(format!("{src}/metrics")).unwrap() {
        let path = entry.unwrap().path();
        if !path.to_string_lossy().ends_with("_tests.rs") {
            files.push(path);
        }
    }
    let mut names = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for line in text.lines().map(str::trim) {
            if let Some(name) = line.strip_prefix("\"cordon_").and_then(|l| l.split('"').next()) {
                names.insert(format!("cordon_{name}"));
            }
        }
    }
    names
}

#[tokio::test(flavor = "multi_thread")]
async fn every_metric_the_alerts_and_the_dashboard_name_is_one_cordon_has() {
    let (_dir, mut cordon, text) = super::bare_metrics().await;
    let _ = (cordon.kill(), cordon.timed_wait());
    let families: BTreeSet<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let registered = registered();
    assert!(
        registered.contains("cordon_requests") && registered.len() >= 20,
        "{registered:?}"
    );
    for declared in families.iter().filter(|f| f.starts_with("cordon_")) {
        assert!(
            family(declared).iter().any(|f| registered.contains(*f)),
            "/metrics declares {declared}, which the scan of the registry's source missed: {registered:?}"
        );
    }
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/monitoring");
    let dashboard = std::fs::read_to_string(format!("{root}/dashboard.json")).unwrap();
    let parsed: serde_json::Value = serde_json::from_str(&dashboard).unwrap();
    assert!(parsed["panels"].as_array().unwrap().len() >= 8);
    let mut checked = 0;
    for file in ["alerts.yaml", "alerts_test.yaml", "dashboard.json"] {
        let text = if file == "dashboard.json" {
            dashboard.clone()
        } else {
            std::fs::read_to_string(format!("{root}/{file}")).unwrap()
        };
        for name in named(&text) {
            assert!(
                family(&name).iter().any(|f| registered.contains(*f)),
                "{file} names {name}, which cordon does not register (it registers {registered:?})"
            );
            checked += 1;
        }
    }
    assert!(checked >= 20, "{checked}");
}
