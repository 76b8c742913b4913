#![expect(clippy::unwrap_used, reason = "tests")]
//! Unit tests for `rate`: request, connection and auth-failure rates on a fake clock.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::FakeRelativeClock;

use super::whole_seconds;
use crate::limits::{LimitRefusal, LimitSpec, Limits, Rate};

/// A rate of `per_second` with `burst`.
fn rate(per_second: u32, burst: u32) -> Rate {
    Rate {
        per_second: NonZeroU32::new(per_second).unwrap(),
        burst: NonZeroU32::new(burst).unwrap(),
    }
}

/// Limits for `spec` on a fresh fake clock, and the clock.
fn fake(spec: LimitSpec) -> (Limits<FakeRelativeClock>, FakeRelativeClock) {
    let clock = FakeRelativeClock::default();
    (Limits::with_clock(&spec, clock.clone()), clock)
}

#[test]
fn whole_seconds_rounds_up_to_at_least_one_second() {
    assert_eq!(whole_seconds(Duration::ZERO), Duration::from_secs(1));
    assert_eq!(whole_seconds(Duration::from_millis(1)), Duration::from_secs(1));
    assert_eq!(whole_seconds(Duration::from_secs(1)), Duration::from_secs(1));
    assert_eq!(whole_seconds(Duration::from_millis(1001)), Duration::from_secs(2));
    assert_eq!(whole_seconds(Duration::from_secs(3000)), Duration::from_secs(3000));
}

#[test]
fn sandbox_rate_is_hit_at_its_burst_and_refills() {
    let (limits, clock) = fake(LimitSpec {
        sandbox_requests: Some(rate(2, 3)),
        ..LimitSpec::default()
    });
    for _ in 0..3 {
        limits
            .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("example.com"))
            .unwrap();
    }
    let refusal = limits
        .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("example.com"))
        .unwrap_err();
    assert_eq!(refusal.reason, LimitRefusal::SANDBOX_RATE);
    assert_eq!(refusal.retry_after, Duration::from_secs(1));
    assert_eq!(refusal.message, "sandbox sb-1 is over 2 requests per second (burst 3)");

    clock.advance(Duration::from_millis(499));
    assert_eq!(
        limits
            .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("example.com"))
            .unwrap_err()
            .reason,
        LimitRefusal::SANDBOX_RATE
    );
    clock.advance(Duration::from_millis(1));
    limits
        .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("example.com"))
        .unwrap();
    assert!(
        limits
            .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("example.com"))
            .is_err()
    );
}

#[test]
fn another_sandbox_is_unaffected() {
    let (limits, _clock) = fake(LimitSpec {
        sandbox_requests: Some(rate(2, 3)),
        ..LimitSpec::default()
    });
    for _ in 0..3 {
        limits
            .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("example.com"))
            .unwrap();
    }
    assert!(
        limits
            .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("example.com"))
            .is_err()
    );
    for _ in 0..3 {
        limits
            .request(&crate::names::SandboxId::from("sb-2"), "alice", Some("example.com"))
            .unwrap();
    }
}

#[test]
fn user_rate_spans_the_users_sandboxes() {
    let (limits, clock) = fake(LimitSpec {
        user_requests: Some(rate(2, 3)),
        ..LimitSpec::default()
    });
    limits
        .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("a.com"))
        .unwrap();
    limits
        .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("a.com"))
        .unwrap();
    limits
        .request(&crate::names::SandboxId::from("sb-2"), "alice", Some("b.com"))
        .unwrap();
    let refusal = limits
        .request(&crate::names::SandboxId::from("sb-3"), "alice", Some("c.com"))
        .unwrap_err();
    assert_eq!(refusal.reason, LimitRefusal::USER_RATE);
    assert_eq!(refusal.retry_after, Duration::from_secs(1));
    assert!(
        refusal
            .message
            .starts_with("user alice is over 2 requests per second (burst 3)")
    );
    limits
        .request(&crate::names::SandboxId::from("sb-9"), "bob", Some("a.com"))
        .unwrap();
    clock.advance(Duration::from_millis(500));
    limits
        .request(&crate::names::SandboxId::from("sb-3"), "alice", Some("c.com"))
        .unwrap();
}

#[test]
fn host_rate_is_per_sandbox_and_host() {
    let (limits, _clock) = fake(LimitSpec {
        host_requests: Some(rate(1, 2)),
        ..LimitSpec::default()
    });
    limits
        .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("a.com"))
        .unwrap();
    limits
        .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("a.com"))
        .unwrap();
    let refusal = limits
        .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("a.com"))
        .unwrap_err();
    assert_eq!(refusal.reason, LimitRefusal::HOST_RATE);
    assert_eq!(
        refusal.message,
        "sandbox sb-1 is over 1 request per second (burst 2) to a.com"
    );
    limits
        .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("b.com"))
        .unwrap();
    limits
        .request(&crate::names::SandboxId::from("sb-2"), "alice", Some("a.com"))
        .unwrap();
}

#[test]
fn a_request_refused_by_the_sandbox_rate_uses_no_user_cell() {
    let spec = LimitSpec {
        sandbox_requests: Some(rate(1, 1)),
        user_requests: Some(rate(1, 2)),
        ..LimitSpec::default()
    };
    let (limits, _clock) = fake(spec);
    limits
        .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("a.com"))
        .unwrap();
    assert_eq!(
        limits
            .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("a.com"))
            .unwrap_err()
            .reason,
        LimitRefusal::SANDBOX_RATE
    );
    // The user's second cell is still there.
    limits
        .request(&crate::names::SandboxId::from("sb-2"), "alice", Some("a.com"))
        .unwrap();
    assert_eq!(
        limits
            .request(&crate::names::SandboxId::from("sb-3"), "alice", Some("a.com"))
            .unwrap_err()
            .reason,
        LimitRefusal::USER_RATE
    );
}

#[test]
fn checks_run_sandbox_then_user_then_host() {
    let spec = LimitSpec {
        sandbox_requests: Some(rate(1, 1)),
        user_requests: Some(rate(1, 1)),
        host_requests: Some(rate(1, 1)),
        ..LimitSpec::default()
    };
    let (limits, _clock) = fake(spec);
    limits
        .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("a.com"))
        .unwrap();
    // All three are spent: the sandbox is reported.
    assert_eq!(
        limits
            .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("a.com"))
            .unwrap_err()
            .reason,
        LimitRefusal::SANDBOX_RATE
    );
    // Fresh sandbox, fresh (sandbox, host), spent user.
    assert_eq!(
        limits
            .request(&crate::names::SandboxId::from("sb-2"), "alice", Some("a.com"))
            .unwrap_err()
            .reason,
        LimitRefusal::USER_RATE
    );

    let spec = LimitSpec {
        sandbox_requests: Some(rate(5, 5)),
        user_requests: Some(rate(5, 5)),
        host_requests: Some(rate(1, 1)),
        ..LimitSpec::default()
    };
    let (limits, _clock) = fake(spec);
    limits
        .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("a.com"))
        .unwrap();
    assert_eq!(
        limits
            .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("a.com"))
            .unwrap_err()
            .reason,
        LimitRefusal::HOST_RATE
    );
}

#[test]
fn connection_rate_is_per_sandbox() {
    let (limits, clock) = fake(LimitSpec {
        sandbox_connections: Some(rate(2, 3)),
        ..LimitSpec::default()
    });
    for _ in 0..3 {
        limits.connection(&crate::names::SandboxId::from("sb-1")).unwrap();
    }
    let refusal = limits.connection(&crate::names::SandboxId::from("sb-1")).unwrap_err();
    assert_eq!(refusal.reason, LimitRefusal::CONNECTION_RATE);
    assert_eq!(refusal.retry_after, Duration::from_secs(1));
    assert_eq!(
        refusal.message,
        "sandbox sb-1 is opening over 2 new connections per second (burst 3)"
    );
    limits.connection(&crate::names::SandboxId::from("sb-2")).unwrap();
    // Requests are a separate budget.
    limits
        .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("a.com"))
        .unwrap();
    clock.advance(Duration::from_millis(500));
    limits.connection(&crate::names::SandboxId::from("sb-1")).unwrap();
}

#[test]
fn retry_after_rounds_a_partial_second_up() {
    let (limits, clock) = fake(LimitSpec {
        sandbox_requests: Some(rate(1, 1)),
        ..LimitSpec::default()
    });
    limits
        .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("a.com"))
        .unwrap();
    clock.advance(Duration::from_millis(100));
    // 900 ms left: the header says 1 s.
    assert_eq!(
        limits
            .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("a.com"))
            .unwrap_err()
            .retry_after,
        Duration::from_secs(1)
    );
    clock.advance(Duration::from_millis(900));
    limits
        .request(&crate::names::SandboxId::from("sb-1"), "alice", Some("a.com"))
        .unwrap();
}

#[test]
fn auth_failures_are_throttled_per_source_and_claimed_id() {
    let (limits, clock) = fake(LimitSpec {
        auth_failures: Some(rate(1, 2)),
        ..LimitSpec::default()
    });
    let source: IpAddr = "10.0.0.1".parse().unwrap();
    let other: IpAddr = "2001:db8::1".parse().unwrap();
    let guess = Some("sb-guessed");

    // Looking does not count.
    for _ in 0..10 {
        assert_eq!(limits.auth_blocked(source, guess), None);
    }
    limits.auth_failure(source, guess).unwrap();
    limits.auth_failure(source, guess).unwrap();
    assert_eq!(
        limits.auth_blocked(source, guess),
        None,
        "not refused yet, so not blocked"
    );
    let refusal = limits.auth_failure(source, guess).unwrap_err();
    assert_eq!(refusal.reason, LimitRefusal::AUTH_THROTTLED);
    assert_eq!(refusal.retry_after, Duration::from_secs(1));
    assert!(
        refusal.message.contains("10.0.0.1") && refusal.message.contains("sb-guessed"),
        "{}",
        refusal.message
    );

    for _ in 0..10 {
        assert_eq!(limits.auth_blocked(source, guess), Some(refusal.clone()));
    }
    // The same address naming another sandbox (a neighbour behind the NAT), and another address: not blocked.
    assert_eq!(limits.auth_blocked(source, Some("sb-neighbour")), None);
    assert_eq!(limits.auth_blocked(source, None), None);
    assert_eq!(limits.auth_blocked(other, guess), None);
    limits.auth_failure(other, guess).unwrap();

    clock.advance(Duration::from_millis(999));
    assert!(limits.auth_blocked(source, guess).is_some());
    clock.advance(Duration::from_millis(1));
    assert_eq!(limits.auth_blocked(source, guess), None);
    limits.auth_failure(source, guess).unwrap();
    assert!(limits.auth_failure(source, guess).is_err());
}

#[test]
fn guessing_across_ids_meets_the_sources_ceiling() {
    let (limits, _clock) = fake(LimitSpec {
        auth_failures: Some(rate(1, 2)),
        source_auth_failures: Some(rate(1, 5)),
        ..LimitSpec::default()
    });
    let source: IpAddr = "10.0.0.1".parse().unwrap();
    for i in 0..5 {
        limits.auth_failure(source, Some(&format!("sb-{i}"))).unwrap();
    }
    let refusal = limits.auth_failure(source, Some("sb-5")).unwrap_err();
    assert!(
        refusal.message.contains("limits.per_source.auth_failures"),
        "{}",
        refusal.message
    );
    // Now the whole address is refused, whatever it names.
    assert!(limits.auth_blocked(source, Some("sb-valid")).is_some());
    assert!(limits.auth_blocked(source, None).is_some());
    // An id that cannot be one, however long, is keyed as no id at all.
    let long = "x".repeat(10_000);
    assert_eq!(limits.auth_blocked("10.0.0.2".parse().unwrap(), Some(&long)), None);
}
