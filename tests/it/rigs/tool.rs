//! The tools and host abilities tests need (curl, chromium, sudo, network namespaces, a cgroup to delegate):
//! one place that says what to do when one is missing. In CI (`CI` set, as CI systems and `.ci/run` set it)
//! a missing one fails the test, so a run that tested nothing cannot pass; elsewhere the test says SKIPPED,
//! loudly, and ends.

use std::process::Command;

use crate::rigs::wait::Within;

/// Whether this run is CI's: `CI` is set to anything but empty, `0` or `false`.
pub(crate) fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"))
}

/// `test` cannot run here (`why`): a failure in CI (or when `force`, a variable the caller names, is `1`),
/// else a loud SKIPPED line. Returns only when the test is to end, skipped.
pub(crate) fn skip(test: &str, why: &str, force: Option<&str>) {
    if in_ci() {
        panic!("{test}: {why}; CI is set, so this is a failure, not a skip");
    }
    if let Some(var) = force
        && std::env::var(var).is_ok_and(|v| v == "1")
    {
        panic!("{test}: {why}, and {var}=1 says it must run");
    }
    eprintln!("\n*** SKIPPED {test}: {why} ***\n");
}

/// `tool` must be here, in CI or not: the test drives it and means nothing without it. Fails the test with how
/// to install it (`install`) when it does not run (`tool ARGS` must succeed, e.g. `--version`).
pub(crate) fn must(tool: &str, args: &[&str], install: &str) {
    let ran = Command::new(tool).args(args).timed_output();
    assert!(
        ran.as_ref().is_ok_and(|o| o.status.success()),
        "{tool} is missing or does not run ({ran:?}): {install} (.ci/run does)"
    );
}
