//! No test can hang: the deadline rig (`tests/it/rigs/wait.rs`) that every wait on a process goes through,
//! tried on the case that left two CI runs waiting 18 minutes: a command that ignores the signals a runner
//! sends, with children of its own, one of them in a session of its own.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::rigs::wait::{TimedChild, Within};

/// A shell that ignores TERM, INT and HUP, starts two sleepers (the second in a new session, out of its
/// process group), writes their pids to `pids`, says `started` and waits for ever.
fn stubborn(pids: &std::path::Path) -> Command {
    let mut c = Command::new("sh");
    c.args([
        "-c",
        "trap '' TERM INT HUP; sleep 600 & echo $! > \"$1\"; setsid sleep 600 & echo $! >> \"$1\"; \
         echo started; wait; wait",
        "stubborn",
    ])
    .arg(pids);
    c
}

/// Whether process `pid` is gone (or a zombie no one has reaped yet: it runs nothing).
fn gone(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

fn message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_default()
}

/// Every process `pids` names is gone within a few seconds (killed ones are reaped by whoever inherits them).
fn all_gone(pids: &std::path::Path) {
    let text = std::fs::read_to_string(pids).unwrap();
    let list: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(list.len(), 2, "{text}");
    crate::rigs::wait::until(
        "the stubborn command's children to be killed",
        Duration::from_secs(10),
        || list.iter().all(|p| gone(p)),
    );
}

#[test]
fn a_command_past_its_deadline_is_killed_with_its_children_and_the_failure_says_what_and_how_long() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let start = Instant::now();
    let failed = std::panic::catch_unwind(|| stubborn(&pids).output_in(Duration::from_secs(2)))
        .expect_err("a command that never ends must fail the test");
    assert!(start.elapsed() < Duration::from_secs(30), "{:?}", start.elapsed());
    let said = message(failed);
    // What it waited for (the command line), how long, and what the command had said by then.
    assert!(said.contains("\"sh\"") && said.contains("trap"), "{said}");
    assert!(said.contains("within 2s"), "{said}");
    assert!(said.contains("started"), "{said}");
    all_gone(&pids);
}

#[test]
fn a_started_process_waited_for_past_its_deadline_is_killed_with_its_children_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let mut child = stubborn(&pids).stdout(Stdio::null()).spawn().unwrap();
    crate::rigs::wait::until(
        "the stubborn command to start its children",
        Duration::from_secs(10),
        || std::fs::read_to_string(&pids).is_ok_and(|t| t.split_whitespace().count() == 2),
    );
    let start = Instant::now();
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| child.wait_in(Duration::from_secs(2))))
        .expect_err("a process that never ends must fail the test");
    assert!(start.elapsed() < Duration::from_secs(30), "{:?}", start.elapsed());
    let said = message(failed);
    // Named by its command line, read from /proc while it ran.
    assert!(said.contains("sh -c trap"), "{said}");
    assert!(said.contains("within 2s"), "{said}");
    all_gone(&pids);
}

#[test]
fn a_server_that_never_says_it_is_ready_fails_the_test_and_is_killed() {
    let mut child = Command::new("sh")
        .args(["-c", "trap '' TERM; echo warming up; sleep 600"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        crate::rigs::wait::line_where(&mut child, "the silent server", Duration::from_secs(2), |l| {
            l == "ready"
        })
    }))
    .expect_err("no ready line must fail the test");
    let said = message(failed);
    assert!(said.contains("the silent server") && said.contains("2s"), "{said}");
    let _ = child.timed_wait();
    assert!(gone(&pid));
}
