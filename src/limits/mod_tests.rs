#![expect(clippy::unwrap_used, reason = "tests")]
//! Unit tests for `limits`: the unlimited default, housekeeping, and what the type promises.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::FakeRelativeClock;

use super::*;

/// The incarnation of the run-time sandbox `id` (bytes and budgets are kept per incarnation).
fn incarnation(id: &str) -> crate::names::Incarnation {
    crate::names::Incarnation::created(&id.into(), "n1")
}

/// A rate of `per_second` with `burst`.
fn rate(per_second: u32, burst: u32) -> Rate {
    Rate {
        per_second: NonZeroU32::new(per_second).unwrap(),
        burst: NonZeroU32::new(burst).unwrap(),
    }
}

/// A spec that limits everything.
fn everything() -> LimitSpec {
    LimitSpec {
        sandbox_requests: Some(rate(2, 3)),
        user_requests: Some(rate(2, 3)),
        host_requests: Some(rate(2, 3)),
        sandbox_connections: Some(rate(2, 3)),
        sandbox_open: Some(2),
        user_open: Some(2),
        budget_window: Duration::from_secs(3600),
        sandbox_upload: Some(100),
        sandbox_download: Some(100),
        auth_failures: Some(rate(1, 1)),
        source_auth_failures: Some(rate(10, 10)),
    }
}

#[test]
fn limits_are_shared_across_tasks() {
    fn shareable<T: Send + Sync + 'static>() {}
    shareable::<Limits>();
    shareable::<Limits<FakeRelativeClock>>();
    shareable::<LimitRefusal>();
}

#[test]
fn default_spec_is_unlimited_with_an_hour_window() {
    let spec = LimitSpec::default();
    assert_eq!(spec.budget_window, Duration::from_secs(3600));
    let limits = Limits::new(&spec);
    assert_eq!(limits.spec(), &spec);
    let source: IpAddr = "192.0.2.1".parse().unwrap();
    let mut guards = Vec::new();
    for _ in 0..1_000 {
        limits
            .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("a.com"))
            .unwrap();
        limits.connection(&crate::names::SandboxId::from("sb-1")).unwrap();
        guards.push(limits.open(&crate::names::SandboxId::from("sb-1"), "alice").unwrap());
        limits.bytes(&incarnation("sb-1"), u64::MAX / 2, u64::MAX / 2).unwrap();
        limits.budget(&incarnation("sb-1")).unwrap();
        limits.auth_failure(source, Some("sb-1")).unwrap();
        assert_eq!(limits.auth_blocked(source, Some("sb-1")), None);
    }
    assert_eq!(
        limits.open_counts(&crate::names::SandboxId::from("sb-1"), "alice"),
        (1_000, 1_000)
    );
    assert_eq!(
        limits.usage(&incarnation("sb-1")),
        (u64::MAX, u64::MAX),
        "counts saturate"
    );
}

#[test]
fn the_real_clock_limits_too() {
    let limits = Limits::new(&everything());
    for _ in 0..3 {
        limits
            .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("a.com"))
            .unwrap();
    }
    let refusal = limits
        .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("a.com"))
        .unwrap_err();
    assert_eq!(refusal.reason, LimitRefusal::SANDBOX_RATE);
    assert!(refusal.retry_after >= Duration::from_secs(1));
    assert!(format!("{limits:?}").contains("sandbox_requests"));
}

#[test]
fn a_refusal_displays_its_message() {
    let refusal = LimitRefusal {
        reason: LimitRefusal::USER_RATE,
        retry_after: Duration::from_secs(1),
        message: "user alice is over 1 request per second (burst 1)".to_owned(),
    };
    assert_eq!(refusal.to_string(), refusal.message);
}

#[test]
fn housekeep_keeps_live_keys_and_forgets_idle_ones() {
    let clock = FakeRelativeClock::default();
    let limits = Limits::with_clock(&everything(), clock.clone());
    let source: IpAddr = "192.0.2.7".parse().unwrap();
    limits
        .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("a.com"))
        .unwrap();
    limits
        .request(&crate::names::SandboxId::from("sb-2"), "bob", Some("b.com"))
        .unwrap();
    limits.connection(&crate::names::SandboxId::from("sb-1")).unwrap();
    limits.bytes(&incarnation("sb-1"), 10, 10).unwrap();
    limits.auth_failure(source, Some("sb-1")).unwrap();
    limits.auth_failure(source, Some("sb-1")).unwrap_err();
    let guard = limits.open(&crate::names::SandboxId::from("sb-1"), "alice").unwrap();

    let live = Tracked {
        sandbox_requests: 2,
        user_requests: 2,
        host_requests: 2,
        sandbox_connections: 1,
        budgets: 1,
        auth_states: 2,
        auth_blocks: 1,
        open: (1, 1),
    };
    assert_eq!(limits.tracked(), live);
    limits.housekeep();
    assert_eq!(limits.tracked(), live, "nothing is idle yet");

    // Rates are fresh again after a few seconds; the byte window lasts the hour; the guard is held.
    clock.advance(Duration::from_secs(10));
    limits.housekeep();
    let later = Tracked {
        budgets: 1,
        open: (1, 1),
        ..Tracked::default()
    };
    assert_eq!(limits.tracked(), later);
    assert_eq!(limits.usage(&incarnation("sb-1")), (10, 10));

    drop(guard);
    clock.advance(Duration::from_secs(3600));
    limits.housekeep();
    assert_eq!(limits.tracked(), Tracked::default());

    // Forgotten keys start fresh.
    for _ in 0..3 {
        limits
            .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("a.com"))
            .unwrap();
    }
    assert!(
        limits
            .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("a.com"))
            .is_err()
    );
    assert_eq!(limits.auth_blocked(source, Some("sb-1")), None);
}
