#![expect(clippy::unwrap_used, reason = "tests")]
//! Unit tests for `budget`: upload and download budgets per fixed window, on a fake clock.

use std::time::Duration;

use governor::clock::FakeRelativeClock;

use super::human;
use crate::limits::{LimitRefusal, LimitSpec, Limits};
use crate::names::Incarnation;

/// One hour.
const HOUR: Duration = Duration::from_secs(3600);

/// The incarnation of the run-time sandbox `id` (budgets are kept per incarnation).
fn sandbox(id: &str) -> Incarnation {
    Incarnation::created(&id.into(), "n1")
}

/// Limits with the given budgets per hour on a fresh fake clock, and the clock.
fn limits(upload: Option<u64>, download: Option<u64>) -> (Limits<FakeRelativeClock>, FakeRelativeClock) {
    let spec = LimitSpec {
        sandbox_upload: upload,
        sandbox_download: download,
        ..LimitSpec::default()
    };
    let clock = FakeRelativeClock::default();
    (Limits::with_clock(&spec, clock.clone()), clock)
}

#[test]
fn upload_budget_is_hit_at_exactly_the_budget() {
    let (limits, _clock) = limits(Some(100), None);
    limits.bytes(&sandbox("sb-1"), 60, 1_000).unwrap();
    limits.bytes(&sandbox("sb-1"), 39, 0).unwrap();
    limits.budget(&sandbox("sb-1")).unwrap();
    limits.bytes(&sandbox("sb-1"), 1, 0).unwrap();
    assert_eq!(limits.usage(&sandbox("sb-1")), (100, 1_000));
    assert_eq!(
        limits.budget(&sandbox("sb-1")).unwrap_err().reason,
        LimitRefusal::UPLOAD_BUDGET,
        "all of it is spent"
    );

    let refusal = limits.bytes(&sandbox("sb-1"), 1, 0).unwrap_err();
    assert_eq!(refusal.reason, LimitRefusal::UPLOAD_BUDGET);
    assert_eq!(refusal.retry_after, HOUR);
    assert_eq!(
        refusal.message,
        "sandbox sb-1#n1 has used its upload budget of 100 bytes per 1h; it renews in 1h"
    );
    assert_eq!(
        limits.usage(&sandbox("sb-1")),
        (101, 1_000),
        "bytes are counted even when refused"
    );
    assert_eq!(
        limits.budget(&sandbox("sb-1")).unwrap_err().reason,
        LimitRefusal::UPLOAD_BUDGET
    );
    // Found over: any further bytes are refused too, and so is nothing at all.
    assert!(limits.bytes(&sandbox("sb-1"), 0, 0).is_err());
    limits.budget(&sandbox("sb-2")).unwrap();
    limits.bytes(&sandbox("sb-2"), 100, 0).unwrap();
}

#[test]
fn download_budget_is_hit_at_exactly_the_budget() {
    let (limits, _clock) = limits(None, Some(100));
    limits.bytes(&sandbox("sb-1"), 5_000, 100).unwrap();
    let refusal = limits.bytes(&sandbox("sb-1"), 0, 1).unwrap_err();
    assert_eq!(refusal.reason, LimitRefusal::DOWNLOAD_BUDGET);
    assert!(
        refusal.message.contains("download budget of 100 bytes"),
        "{}",
        refusal.message
    );
    assert_eq!(
        limits.budget(&sandbox("sb-1")).unwrap_err().reason,
        LimitRefusal::DOWNLOAD_BUDGET
    );
}

#[test]
fn upload_is_reported_before_download() {
    let (limits, _clock) = limits(Some(10), Some(10));
    assert_eq!(
        limits.bytes(&sandbox("sb-1"), 11, 11).unwrap_err().reason,
        LimitRefusal::UPLOAD_BUDGET
    );
}

#[test]
fn retry_after_is_the_rest_of_the_window() {
    let (limits, clock) = limits(Some(100), None);
    limits.bytes(&sandbox("sb-1"), 1, 0).unwrap();
    clock.advance(Duration::from_secs(600));
    let refusal = limits.bytes(&sandbox("sb-1"), 100, 0).unwrap_err();
    assert_eq!(refusal.retry_after, Duration::from_secs(3000));
    assert!(refusal.message.ends_with("it renews in 50m"), "{}", refusal.message);
    clock.advance(Duration::from_millis(500));
    assert_eq!(
        limits.budget(&sandbox("sb-1")).unwrap_err().retry_after,
        Duration::from_secs(3000),
        "rounded up"
    );
}

#[test]
fn a_new_window_starts_from_zero() {
    let (limits, clock) = limits(Some(100), Some(100));
    limits.bytes(&sandbox("sb-1"), 101, 0).unwrap_err();
    clock.advance(HOUR - Duration::from_nanos(1));
    assert!(limits.budget(&sandbox("sb-1")).is_err());
    assert_eq!(
        limits.budget(&sandbox("sb-1")).unwrap_err().retry_after,
        Duration::from_secs(1)
    );
    clock.advance(Duration::from_nanos(1));
    limits.budget(&sandbox("sb-1")).unwrap();
    assert_eq!(limits.usage(&sandbox("sb-1")), (0, 0));
    limits.bytes(&sandbox("sb-1"), 100, 100).unwrap();
    assert_eq!(limits.usage(&sandbox("sb-1")), (100, 100));
}

#[test]
fn each_sandbox_has_its_own_window() {
    let (limits, clock) = limits(Some(100), None);
    limits.bytes(&sandbox("sb-1"), 100, 0).unwrap();
    clock.advance(Duration::from_secs(1800));
    limits.bytes(&sandbox("sb-2"), 100, 0).unwrap();
    clock.advance(Duration::from_secs(1800));
    // sb-1's window is over; sb-2's has half an hour left.
    limits.bytes(&sandbox("sb-1"), 100, 0).unwrap();
    let refusal = limits.bytes(&sandbox("sb-2"), 1, 0).unwrap_err();
    assert_eq!(refusal.retry_after, Duration::from_secs(1800));
}

#[test]
fn no_bytes_open_no_window() {
    let (limits, _clock) = limits(Some(100), None);
    limits.bytes(&sandbox("sb-1"), 0, 0).unwrap();
    assert_eq!(limits.tracked().budgets, 0);
    limits.bytes(&sandbox("sb-1"), 0, 1).unwrap();
    assert_eq!(limits.tracked().budgets, 1);
}

#[test]
fn human_durations() {
    assert_eq!(human(HOUR), "1h");
    assert_eq!(human(Duration::from_secs(5400)), "90m");
    assert_eq!(human(Duration::from_secs(45)), "45s");
    assert_eq!(human(Duration::from_millis(250)), "250ms");
    assert_eq!(human(Duration::ZERO), "0ms");
}
