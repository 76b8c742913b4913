#![expect(clippy::unwrap_used, reason = "tests")]
//! Unit tests for `open`: caps on open connections and tunnels, released by the guard.

use std::thread;
use std::time::Duration;

use super::OpenGuard;
use crate::limits::{LimitRefusal, LimitSpec, Limits};

#[test]
fn sandbox_cap_is_released_when_a_guard_drops() {
    let limits = Limits::new(&LimitSpec {
        sandbox_open: Some(2),
        ..LimitSpec::default()
    });
    let first = limits.open(&crate::names::SandboxId::from("sb-1"), "alice").unwrap();
    let _second = limits.open(&crate::names::SandboxId::from("sb-1"), "alice").unwrap();
    assert_eq!(
        limits.open_counts(&crate::names::SandboxId::from("sb-1"), "alice"),
        (2, 2)
    );

    let refusal = limits
        .open(&crate::names::SandboxId::from("sb-1"), "alice")
        .unwrap_err();
    assert_eq!(refusal.reason, LimitRefusal::SANDBOX_OPEN_LIMIT);
    assert_eq!(refusal.retry_after, Duration::from_secs(1));
    assert!(
        refusal.message.starts_with("sandbox sb-1 already has 2 connections"),
        "{}",
        refusal.message
    );
    assert_eq!(
        limits.open_counts(&crate::names::SandboxId::from("sb-1"), "alice"),
        (2, 2),
        "a refusal takes no slot"
    );

    // Another sandbox of the same user is not capped by sb-1's count.
    let _other = limits.open(&crate::names::SandboxId::from("sb-2"), "alice").unwrap();
    assert_eq!(
        limits.open_counts(&crate::names::SandboxId::from("sb-1"), "alice"),
        (2, 3)
    );

    drop(first);
    assert_eq!(
        limits.open_counts(&crate::names::SandboxId::from("sb-1"), "alice"),
        (1, 2)
    );
    let _third = limits.open(&crate::names::SandboxId::from("sb-1"), "alice").unwrap();
}

#[test]
fn user_cap_spans_the_users_sandboxes() {
    let limits = Limits::new(&LimitSpec {
        user_open: Some(3),
        ..LimitSpec::default()
    });
    let guards = [
        limits.open(&crate::names::SandboxId::from("sb-1"), "alice").unwrap(),
        limits.open(&crate::names::SandboxId::from("sb-1"), "alice").unwrap(),
        limits.open(&crate::names::SandboxId::from("sb-2"), "alice").unwrap(),
    ];
    let refusal = limits
        .open(&crate::names::SandboxId::from("sb-3"), "alice")
        .unwrap_err();
    assert_eq!(refusal.reason, LimitRefusal::USER_OPEN_LIMIT);
    assert_eq!(refusal.retry_after, Duration::from_secs(1));
    assert!(
        refusal.message.starts_with("user alice already has 3 connections"),
        "{}",
        refusal.message
    );
    assert_eq!(
        limits.open_counts(&crate::names::SandboxId::from("sb-3"), "alice"),
        (0, 3)
    );
    let bob = limits.open(&crate::names::SandboxId::from("sb-9"), "bob").unwrap();
    assert_eq!((bob.sandbox().as_str(), bob.user()), ("sb-9", "bob"));

    drop(guards);
    assert_eq!(
        limits.open_counts(&crate::names::SandboxId::from("sb-1"), "alice"),
        (0, 0)
    );
    assert_eq!(
        limits.open_counts(&crate::names::SandboxId::from("sb-9"), "bob"),
        (1, 1)
    );
    drop(bob);
    assert_eq!(
        limits.tracked().open,
        (0, 0),
        "zero counts are removed when the last guard drops"
    );
}

#[test]
fn sandbox_cap_is_checked_before_the_user_cap() {
    let limits = Limits::new(&LimitSpec {
        sandbox_open: Some(1),
        user_open: Some(1),
        ..LimitSpec::default()
    });
    let _guard = limits.open(&crate::names::SandboxId::from("sb-1"), "alice").unwrap();
    assert_eq!(
        limits
            .open(&crate::names::SandboxId::from("sb-1"), "alice")
            .unwrap_err()
            .reason,
        LimitRefusal::SANDBOX_OPEN_LIMIT
    );
    assert_eq!(
        limits
            .open(&crate::names::SandboxId::from("sb-2"), "alice")
            .unwrap_err()
            .reason,
        LimitRefusal::USER_OPEN_LIMIT
    );
}

#[test]
fn a_guard_moves_to_another_thread_and_outlives_the_limits() {
    fn shareable<T: Send + Sync + 'static>() {}
    shareable::<OpenGuard>();

    let limits = Limits::new(&LimitSpec {
        sandbox_open: Some(1),
        ..LimitSpec::default()
    });
    let guard = limits.open(&crate::names::SandboxId::from("sb-1"), "alice").unwrap();
    assert!(format!("{guard:?}").contains("sb-1"));
    thread::spawn(move || drop(guard)).join().unwrap();
    assert_eq!(
        limits.open_counts(&crate::names::SandboxId::from("sb-1"), "alice"),
        (0, 0)
    );

    let kept = limits.open(&crate::names::SandboxId::from("sb-1"), "alice").unwrap();
    drop(limits);
    drop(kept);
}
