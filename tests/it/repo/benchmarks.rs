//! BENCHMARKS.md is for readers outside the project: it names no internal issue, session or stop number (a
//! figure is known by what it measures and how, not by which piece of work made it), and the load harness it
//! comes from keeps a smoke mode that CI runs (`.ci/run`), so its scenarios cannot rot unnoticed.

use std::path::Path;

#[test]
fn benchmarks_name_no_internal_issue_or_session_numbers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("BENCHMARKS.md")).unwrap();
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let lower = line.to_lowercase();
        let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric() && c != '#').collect();
        for (i, w) in words.iter().enumerate() {
            let next_is_number = words
                .get(i + 1)
                .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty());
            let numbered = w.len() > 1 && w.starts_with('#') && w[1..].chars().all(|c| c.is_ascii_digit());
            if numbered || (matches!(*w, "issue" | "session" | "stop") && next_is_number) || *w == "issue" {
                found.push(format!("BENCHMARKS.md:{}: {line}", n + 1));
                break;
            }
        }
    }
    assert!(
        found.is_empty(),
        "internal numbers in BENCHMARKS.md:\n{}",
        found.join("\n")
    );
}

#[test]
fn ci_runs_the_load_harness_smoke() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    assert!(
        ci.contains("benches/load/run.sh --smoke"),
        ".ci/run no longer runs the load harness smoke"
    );
    let run = std::fs::read_to_string(root.join("benches/load/run.sh")).unwrap();
    let check = std::fs::read_to_string(root.join("benches/load/smoke_check.py")).unwrap();
    // Every scenario run.sh runs without peers is one the smoke verdict expects.
    for line in run.lines().map(str::trim).filter(|l| l.starts_with("run ")) {
        let name = line.split_whitespace().nth(1).unwrap();
        if !name.starts_with("squid") && !name.starts_with("mitmdump") {
            assert!(
                check.contains(&format!("\"{name}\"")),
                "smoke_check.py does not expect {name}"
            );
        }
    }
}
