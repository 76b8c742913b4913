//! The configuration file's watcher, through the binary: reading the file (cordon's own read, an editor,
//! `cordon check`) wakes nothing; a half-finished edit is refused and reported once, however often the file is
//! read afterwards; the edit finished is applied once.

use std::time::Duration;

use crate::rigs::control::admin_request;
use crate::rigs::ports::free_port;
use crate::rigs::wait::{TimedChild, Within};

/// `cordon_reloads_total{trigger="file",outcome=...}` as the admin API's /metrics says.
async fn reloads(admin: std::net::SocketAddr, outcome: &str) -> u64 {
    let (_, _, text) = admin_request(admin, "GET", "/metrics", None, "").await;
    let series = format!("cordon_reloads_total{{trigger=\"file\",outcome=\"{outcome}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&series))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or(0)
}

/// Read `path` the ways people and tools do, for about `for_ms`.
fn read_repeatedly(path: &std::path::Path, for_ms: u64) {
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_millis(for_ms) {
        let _ = std::fs::read_to_string(path).unwrap();
        let out = std::process::Command::new(crate::rigs::process::BIN)
            .args(["check", "--config"])
            .arg(path)
            .timed_output()
            .unwrap();
        let _ = out.status;
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_watcher_reacts_to_changes_only_and_reports_a_broken_edit_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (proxy, admin_port) = (free_port(), free_port());
    let good = format!(
        "listen: {{ proxy: \"127.0.0.1:{proxy}\", admin: \"127.0.0.1:{admin_port}\" }}\n\
         audit: {{ path: {a}/audit.jsonl }}\nca: {{ dir: {a}/cas }}\n\
         control: {{ admin_token: {{ file: {a}/admin-token }} }}\n\
         policies:\n  p:\n    allow:\n      - host: one.test\n",
        a = d.join("state").display()
    );
    std::fs::create_dir(d.join("state")).unwrap();
    let config = d.join("cordon.yaml");
    std::fs::write(&config, &good).unwrap();
    let child = crate::rigs::process::spawn_cordon(&config, proxy, &[]).await;
    let admin = std::net::SocketAddr::from(([127, 0, 0, 1], admin_port));

    // Reading wakes nothing.
    read_repeatedly(&config, 1500);
    assert_eq!(reloads(admin, "ok").await, 0, "reading the file reloaded it");
    assert_eq!(reloads(admin, "invalid").await, 0);

    // A broken edit: refused once, and not again while it is only read.
    std::fs::write(&config, format!("{good}      - host: [\n")).unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(reloads(admin, "invalid").await, 1);
    read_repeatedly(&config, 1500);
    assert_eq!(
        reloads(admin, "invalid").await,
        1,
        "the same broken content was refused again"
    );

    // The edit finished: applied once.
    std::fs::write(&config, format!("{good}      - host: two.test\n")).unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(reloads(admin, "ok").await, 1);
    read_repeatedly(&config, 800);
    assert_eq!(reloads(admin, "ok").await, 1);

    let mut child = child;
    child.kill().unwrap();
    let out = child.timed_wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("reload refused").count(), 1, "{stderr}");
    assert_eq!(stderr.matches("configuration reloaded").count(), 1, "{stderr}");
}
