#![expect(clippy::unwrap_used, reason = "tests")]
//! Unit tests for `metrics`: updates from many threads, read back by parsing the exposition.

use std::collections::BTreeMap;
use std::thread;
use std::time::Duration;

use super::*;

/// One sample line of the exposition: metric name, labels, value.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// Parse `name{k="v",...} value` lines; `#` lines and blank lines are skipped.
fn parse(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(parse_line)
        .collect()
}

/// Parse one sample line (label values may hold `\"`, `\\` and `\n` escapes).
fn parse_line(line: &str) -> Sample {
    let (series, value) = line.rsplit_once(' ').unwrap();
    let value = match value {
        "+Inf" => f64::INFINITY,
        other => other.parse().unwrap(),
    };
    let Some((name, rest)) = series.split_once('{') else {
        return Sample {
            name: series.to_owned(),
            labels: BTreeMap::new(),
            value,
        };
    };
    let body = rest.strip_suffix('}').unwrap();
    let mut labels = BTreeMap::new();
    let mut chars = body.chars().peekable();
    while chars.peek().is_some() {
        let key: String = chars.by_ref().take_while(|&c| c != '=').collect();
        assert_eq!(chars.next(), Some('"'), "label {key} in {line}");
        let mut val = String::new();
        loop {
            match chars.next().unwrap() {
                '"' => break,
                '\\' => match chars.next().unwrap() {
                    'n' => val.push('\n'),
                    c => val.push(c),
                },
                c => val.push(c),
            }
        }
        labels.insert(key, val);
        if chars.peek() == Some(&',') {
            chars.next();
        }
    }
    Sample {
        name: name.to_owned(),
        labels,
        value,
    }
}

/// The value of the one series named `name` whose labels include all of `want`, if any.
fn value(samples: &[Sample], name: &str, want: &[(&str, &str)]) -> Option<f64> {
    let mut found = samples.iter().filter(|s| {
        s.name == name
            && want
                .iter()
                .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
    });
    let first = found.next()?;
    assert!(found.next().is_none(), "more than one series {name} {want:?}");
    Some(first.value)
}

/// Run `work` on `threads` threads at once, each given its index.
fn on_threads(threads: usize, work: impl Fn(usize) + Sync) {
    thread::scope(|scope| {
        for index in 0..threads {
            let work = &work;
            scope.spawn(move || work(index));
        }
    });
}

#[test]
fn requests_counted_exactly_across_threads() {
    let metrics = Metrics::new();
    on_threads(8, |index| {
        for _ in 0..250 {
            metrics.request("http", "allow", "ok", "", Duration::from_micros(100));
            if index % 2 == 0 {
                metrics.request("connect", "deny", "ok", "no_rule", Duration::from_millis(3));
            }
        }
    });
    let samples = parse(&metrics.encode());
    let total = "cordon_requests_total";
    let allow = [("kind", "http"), ("decision", "allow"), ("reason", "none")];
    assert_eq!(value(&samples, total, &allow), Some(2000.0));
    let deny = [("kind", "connect"), ("decision", "deny"), ("reason", "no_rule")];
    assert_eq!(value(&samples, total, &deny), Some(1000.0));
    assert_eq!(
        value(&samples, total, &[("reason", "")]),
        None,
        "empty reason is exported as none"
    );
}

#[test]
fn latency_histogram_counts_and_buckets() {
    let metrics = Metrics::new();
    on_threads(4, |_| {
        for _ in 0..100 {
            metrics.request("https", "allow", "ok", "", Duration::from_millis(3));
        }
    });
    metrics.request("https", "allow", "ok", "", Duration::from_secs(120));
    let samples = parse(&metrics.encode());
    let labels = [("kind", "https"), ("decision", "allow")];
    assert_eq!(
        value(&samples, "cordon_request_duration_seconds_count", &labels),
        Some(401.0)
    );
    let inf = [("kind", "https"), ("decision", "allow"), ("le", "+Inf")];
    assert_eq!(
        value(&samples, "cordon_request_duration_seconds_bucket", &inf),
        Some(401.0)
    );
    let sum = value(&samples, "cordon_request_duration_seconds_sum", &labels).unwrap();
    assert!((sum - 121.2).abs() < 1e-6, "sum {sum}");
    assert!(
        samples
            .iter()
            .filter(|s| s.name.starts_with("cordon_request_duration"))
            .all(|s| !s.labels.contains_key("reason")),
        "the histogram has no reason label"
    );

    // Finite bounds run from 0.5 ms to 60 s, and counts are cumulative.
    let buckets: Vec<(f64, f64)> = samples
        .iter()
        .filter(|s| s.name == "cordon_request_duration_seconds_bucket")
        .map(|s| (s.labels["le"].parse::<f64>().unwrap(), s.value))
        .collect();
    let (first, last_finite) = (buckets[0].0, buckets[buckets.len() - 2].0);
    assert!(
        (first - 0.0005).abs() < 1e-9 && (last_finite - 60.0).abs() < 1e-6,
        "{buckets:?}"
    );
    assert!(
        buckets.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
        "{buckets:?}"
    );
    assert_eq!(buckets[0].1, 0.0, "3 ms is above the first bound");
    assert_eq!(buckets[buckets.len() - 2].1, 400.0, "120 s is only in +Inf");
}

#[test]
fn gauges_go_up_and_down() {
    let metrics = Metrics::new();
    on_threads(4, |_| {
        for _ in 0..100 {
            metrics.connection_opened(&crate::names::SandboxId::from("alpha"));
            metrics.tunnel_opened(&crate::names::SandboxId::from("alpha"), "intercept");
            metrics.tunnel_opened(&crate::names::SandboxId::from("alpha"), "tunnel");
        }
        for _ in 0..40 {
            metrics.connection_closed(&crate::names::SandboxId::from("alpha"));
            metrics.tunnel_closed(&crate::names::SandboxId::from("alpha"), "intercept");
        }
        for _ in 0..100 {
            metrics.tunnel_closed(&crate::names::SandboxId::from("alpha"), "tunnel");
        }
    });
    metrics.set_config_generation(7);
    metrics.set_sandboxes(3);
    metrics.set_sandboxes(2);
    let samples = parse(&metrics.encode());
    let open = value(&samples, "cordon_open_connections", &[("sandbox", "alpha")]);
    assert_eq!(open, Some(240.0));
    let intercept = [("sandbox", "alpha"), ("mode", "intercept")];
    assert_eq!(value(&samples, "cordon_open_tunnels", &intercept), Some(240.0));
    let tunnel = [("sandbox", "alpha"), ("mode", "tunnel")];
    assert_eq!(value(&samples, "cordon_open_tunnels", &tunnel), Some(0.0));
    assert_eq!(value(&samples, "cordon_config_generation", &[]), Some(7.0));
    assert_eq!(value(&samples, "cordon_sandboxes", &[]), Some(2.0));
}

#[test]
fn forget_sandbox_waits_for_zero_then_removes_its_series() {
    let metrics = Metrics::new();
    metrics.connection_opened(&crate::names::SandboxId::from("gone"));
    metrics.tunnel_opened(&crate::names::SandboxId::from("gone"), "tunnel");
    metrics.connection_opened(&crate::names::SandboxId::from("stays"));
    metrics.connection_closed(&crate::names::SandboxId::from("gone"));

    // A tunnel is still open: nothing is forgotten.
    metrics.forget_sandbox(&crate::names::SandboxId::from("gone"));
    let samples = parse(&metrics.encode());
    assert_eq!(
        value(&samples, "cordon_open_connections", &[("sandbox", "gone")]),
        Some(0.0)
    );
    assert_eq!(
        value(&samples, "cordon_open_tunnels", &[("sandbox", "gone")]),
        Some(1.0)
    );

    metrics.tunnel_closed(&crate::names::SandboxId::from("gone"), "tunnel");
    metrics.forget_sandbox(&crate::names::SandboxId::from("gone"));
    let samples = parse(&metrics.encode());
    assert!(
        samples
            .iter()
            .all(|s| s.labels.get("sandbox").map(String::as_str) != Some("gone"))
    );
    assert_eq!(
        value(&samples, "cordon_open_connections", &[("sandbox", "stays")]),
        Some(1.0)
    );

    // A stray close after forgetting does not bring the series back at -1.
    metrics.connection_closed(&crate::names::SandboxId::from("gone"));
    metrics.tunnel_closed(&crate::names::SandboxId::from("gone"), "tunnel");
    let samples = parse(&metrics.encode());
    assert!(
        samples
            .iter()
            .all(|s| s.labels.get("sandbox").map(String::as_str) != Some("gone"))
    );
}

#[test]
fn forget_races_with_opens_without_losing_counts() {
    // Connections stay open while tunnels churn and another thread keeps forgetting the sandbox:
    // no open connection may be lost, and no series may go negative.
    let metrics = Metrics::new();
    on_threads(4, |index| {
        for _ in 0..300 {
            if index == 0 {
                metrics.forget_sandbox(&crate::names::SandboxId::from("busy"));
            } else {
                metrics.tunnel_opened(&crate::names::SandboxId::from("busy"), "intercept");
                metrics.connection_opened(&crate::names::SandboxId::from("busy"));
                metrics.tunnel_closed(&crate::names::SandboxId::from("busy"), "intercept");
            }
        }
    });
    let samples = parse(&metrics.encode());
    assert_eq!(
        value(&samples, "cordon_open_connections", &[("sandbox", "busy")]),
        Some(900.0)
    );
    let tunnels = value(&samples, "cordon_open_tunnels", &[("sandbox", "busy")]).unwrap_or(0.0);
    assert_eq!(tunnels, 0.0);
}

#[test]
fn counters_by_label() {
    let metrics = Metrics::default();
    let before = parse(&metrics.encode());
    assert_eq!(
        value(&before, "cordon_cert_cache_lookups_total", &[("result", "hit")]),
        Some(0.0)
    );
    assert_eq!(
        value(&before, "cordon_cert_cache_lookups_total", &[("result", "miss")]),
        Some(0.0)
    );

    on_threads(3, |_| {
        for n in 0..10 {
            metrics.cert_cache(n % 5 != 0);
            metrics.token_mint("github", n != 0);
        }
    });
    metrics.reload("signal", "ok");
    metrics.reload("file", "invalid");
    metrics.reload("file", "invalid");
    metrics.sandbox_closed("revoked");
    metrics.sandbox_closed("expired");
    metrics.sandbox_closed("expired");

    let samples = parse(&metrics.encode());
    let lookups = "cordon_cert_cache_lookups_total";
    assert_eq!(value(&samples, lookups, &[("result", "hit")]), Some(24.0));
    assert_eq!(value(&samples, lookups, &[("result", "miss")]), Some(6.0));
    let mints = "cordon_token_mints_total";
    assert_eq!(
        value(&samples, mints, &[("credential", "github"), ("result", "ok")]),
        Some(27.0)
    );
    assert_eq!(
        value(&samples, mints, &[("credential", "github"), ("result", "failed")]),
        Some(3.0)
    );
    let reloads = "cordon_reloads_total";
    assert_eq!(
        value(&samples, reloads, &[("trigger", "signal"), ("outcome", "ok")]),
        Some(1.0)
    );
    assert_eq!(
        value(&samples, reloads, &[("trigger", "file"), ("outcome", "invalid")]),
        Some(2.0)
    );
    let closures = "cordon_sandbox_closures_total";
    assert_eq!(value(&samples, closures, &[("reason", "expired")]), Some(2.0));
    assert_eq!(value(&samples, closures, &[("reason", "revoked")]), Some(1.0));
}

#[test]
fn fresh_exposition_lists_only_families_with_series() {
    // prometheus-client skips a label family that has no series yet (no HELP or TYPE either).
    let text = Metrics::new().encode();
    let types: Vec<&str> = text.lines().filter(|line| line.starts_with("# TYPE ")).collect();
    let expected = [
        "# TYPE cordon_cert_cache_lookups counter",
        "# TYPE cordon_config_generation gauge",
        "# TYPE cordon_sandboxes gauge",
        "# TYPE cordon_approvals_pending gauge",
        "# TYPE cordon_store_up gauge",
        "# TYPE cordon_audit_up gauge",
        "# TYPE cordon_audit_records_dropped counter",
        "# TYPE cordon_audit_export_failures counter",
        "# TYPE cordon_audit_export_backlog_bytes gauge",
        "# TYPE cordon_audit_export_dropped_bytes counter",
        "# TYPE cordon_build_info gauge",
        "# TYPE cordon_replicas_live gauge",
        "# TYPE process_cpu_seconds counter",
        "# TYPE process_resident_memory_bytes gauge",
        "# TYPE process_start_time_seconds gauge",
        "# TYPE process_open_fds gauge",
        "# TYPE process_max_fds gauge",
    ];
    assert_eq!(types, expected, "{text}");
    assert!(text.ends_with("\n# EOF\n"), "{text}");
}

#[test]
fn exposition_is_openmetrics_with_help_and_eof() {
    let metrics = Metrics::new();
    metrics.request("http", "allow", "ok", "", Duration::from_millis(1));
    metrics.connection_opened(&crate::names::SandboxId::from("s"));
    metrics.tunnel_opened(&crate::names::SandboxId::from("s"), "tunnel");
    metrics.token_mint("c", true);
    metrics.reload("api", "ok");
    metrics.sandbox_closed("removed");
    let text = metrics.encode();
    assert!(text.ends_with("# EOF\n"), "{text}");
    assert_eq!(text.matches("# EOF").count(), 1);
    for (name, kind) in [
        ("cordon_requests", "counter"),
        ("cordon_request_duration_seconds", "histogram"),
        ("cordon_open_connections", "gauge"),
        ("cordon_open_tunnels", "gauge"),
        ("cordon_cert_cache_lookups", "counter"),
        ("cordon_token_mints", "counter"),
        ("cordon_reloads", "counter"),
        ("cordon_config_generation", "gauge"),
        ("cordon_sandboxes", "gauge"),
        ("cordon_sandbox_closures", "counter"),
    ] {
        assert!(text.contains(&format!("# TYPE {name} {kind}\n")), "{name}: {text}");
        assert!(text.contains(&format!("# HELP {name} ")), "{name}: {text}");
    }
    assert!(
        text.contains("# UNIT cordon_request_duration_seconds seconds\n"),
        "{text}"
    );
    assert!(CONTENT_TYPE.starts_with("application/openmetrics-text; version=1.0.0"));
}

#[test]
fn label_values_are_escaped() {
    let metrics = Metrics::new();
    // A sandbox id cannot hold these characters (`SandboxId::parse`); a credential's name can.
    metrics.credential_budget_spent("a\"b\\c\nd");
    let samples = parse(&metrics.encode());
    assert_eq!(
        value(
            &samples,
            "cordon_credential_budgets_spent_total",
            &[("credential", "a\"b\\c\nd")]
        ),
        Some(1.0)
    );
}

#[test]
fn metrics_is_shareable() {
    fn shareable<T: Send + Sync + 'static>() {}
    shareable::<Metrics>();
}
