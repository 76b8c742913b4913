//! What cordon says about its build and its process, through the binary: `cordon --version` with the git
//! commit, the build date and the target triple, `cordon_build_info` with the same commit, and the standard `process_*` metrics
//! with figures that agree with /proc.

use crate::rigs::wait::{TimedChild, Within};
/// The commit the tests were built from, as build.rs reads it.
fn head() -> String {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .timed_output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The target triple the tests were built for: rustc's host triple (the tests are not cross-compiled).
fn host_triple() -> String {
    let out = std::process::Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .arg("-vV")
        .timed_output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .unwrap()
        .trim()
        .to_owned()
}

#[test]
fn version_names_the_commit_the_build_date_and_the_target() {
    let (code, out, err) = crate::rigs::process::cordon(&["--version"]);
    assert_eq!(code, 0, "{err}");
    let line = out.trim();
    let rest = line
        .strip_prefix(&format!("cordon {} (commit ", env!("CARGO_PKG_VERSION")))
        .unwrap_or_else(|| panic!("{line}"));
    let (commit, rest) = rest.strip_suffix(')').unwrap().split_once(", built ").unwrap();
    let (date, target) = rest.split_once(", ").unwrap_or_else(|| panic!("{line}"));
    assert_eq!(commit, head(), "{line}");
    assert_eq!(target, host_triple(), "{line}");
    assert!(
        time::Date::parse(date, time::macros::format_description!("[year]-[month]-[day]")).is_ok(),
        "{line}"
    );
}

/// The value of the series `name` (with its labels, if any) in the metrics text.
fn value(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_carry_build_info_and_the_process_figures() {
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let (_dir, mut child, text) = super::bare_metrics().await;

    let info = format!(
        "cordon_build_info{{version=\"{}\",commit=\"{}\",rustc=\"",
        env!("CARGO_PKG_VERSION"),
        head()
    );
    let line = text
        .lines()
        .find(|l| l.starts_with(&info))
        .unwrap_or_else(|| panic!("no {info} in:\n{text}"));
    assert!(line.ends_with("\"} 1"), "{line}");

    let pid = child.id();
    let status_file = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss_kib: f64 = status_file
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .unwrap()
        .trim()
        .trim_end_matches(" kB")
        .parse()
        .unwrap();
    let rss = value(&text, "process_resident_memory_bytes");
    assert!(
        rss > 1e6 && (rss / 1024.0 - rss_kib).abs() < rss_kib * 0.5,
        "{rss} bytes against {rss_kib} KiB"
    );
    let start = value(&text, "process_start_time_seconds");
    assert!(
        (start - before).abs() < 30.0,
        "started at {start}, the test spawned it at {before}"
    );
    let cpu = value(&text, "process_cpu_seconds_total");
    assert!((0.0..60.0).contains(&cpu), "{cpu}");
    let open = value(&text, "process_open_fds");
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count() as f64;
    assert!(
        open >= 3.0 && (open - fds).abs() < 10.0,
        "{open} open, /proc lists {fds}"
    );
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let soft: f64 = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap()
        .split_whitespace()
        .nth(3)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(value(&text, "process_max_fds"), soft);
    for family in ["process_cpu_seconds counter", "process_resident_memory_bytes gauge"] {
        assert!(text.contains(&format!("# TYPE {family}")), "{family}:\n{text}");
    }
    child.kill().unwrap();
    child.timed_wait().unwrap();
}
