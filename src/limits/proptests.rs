//! Property tests of the limiters on a fake clock: a rate's long-run count, and byte budgets against a model
//! of fixed windows.
#![expect(clippy::unwrap_used, reason = "tests")]

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::FakeRelativeClock;
use proptest::prelude::*;

use super::{LimitSpec, Limits, Rate};

proptest! {
    // Each case makes up to two million requests: fewer cases.
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Asked far more often than it allows, a rate of r per second with burst b lets through b at once and
    /// then r per second: over T seconds, b + r*T. Never more (within one); fewer only by what the clock's
    /// steps lose (a hundredth of the interval per request, when no burst absorbs it).
    #[test]
    fn a_rate_allows_its_burst_then_its_rate(per_second in 1u32..200, burst in 1u32..100, seconds in 1u64..20) {
        let rate = Rate { per_second: NonZeroU32::new(per_second).unwrap(), burst: NonZeroU32::new(burst).unwrap() };
        let clock = FakeRelativeClock::default();
        let limits = Limits::with_clock(&LimitSpec { sandbox_requests: Some(rate), ..LimitSpec::default() }, clock.clone());
        // A hundred attempts per allowed request.
        let step = Duration::from_micros((10_000 / u64::from(per_second)).max(1));
        let end = Duration::from_secs(seconds);
        let (mut now, mut allowed) = (Duration::ZERO, 0u64);
        while now < end {
            if limits.request(&crate::names::SandboxId::from("sb"), "u", None).is_ok() {
                allowed += 1;
            }
            clock.advance(step);
            now += step;
        }
        let want = u64::from(burst) + u64::from(per_second) * seconds;
        prop_assert!(allowed <= want + 1, "allowed {} want {} (step {:?})", allowed, want, step);
        prop_assert!(allowed * 100 + 100 >= want * 99, "allowed {} want {} (step {:?})", allowed, want, step);
    }

}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Byte budgets follow the model: a window starts at a sandbox's first counted byte and lasts the window;
    /// the count is refused once it is over the budget, and checking refuses once it is at the budget.
    #[test]
    fn budgets_follow_fixed_windows(
        budget in 1u64..1000,
        window_secs in 1u64..100,
        events in prop::collection::vec((0u64..40_000, 0u64..300), 1..60),
    ) {
        let clock = FakeRelativeClock::default();
        let spec = LimitSpec {
            sandbox_upload: Some(budget),
            budget_window: Duration::from_secs(window_secs),
            ..LimitSpec::default()
        };
        let limits = Limits::with_clock(&spec, clock.clone());
        let sb = crate::names::Incarnation::created(&crate::names::SandboxId::from("sb"), "n1");
        let window = Duration::from_secs(window_secs);
        // The model: (start, used) of the current window.
        let mut model: Option<(Duration, u64)> = None;
        let mut now = Duration::ZERO;
        for (advance_ms, bytes) in events {
            clock.advance(Duration::from_millis(advance_ms));
            now += Duration::from_millis(advance_ms);
            if model.is_some_and(|(start, _)| now - start >= window) {
                model = if bytes == 0 { model.map(|_| (now, 0)) } else { Some((now, 0)) };
            }
            let counted = limits.bytes(&sb, bytes, 0);
            if bytes > 0 || model.is_some() {
                let (start, used) = model.unwrap_or((now, 0));
                model = Some((start, used + bytes));
            }
            let over = model.is_some_and(|(_, used)| used > budget);
            prop_assert_eq!(counted.is_err(), over, "count at {:?}", now);
            let spent = model.is_some_and(|(start, used)| now - start < window && used >= budget);
            prop_assert_eq!(limits.budget(&sb).is_err(), spent, "check at {:?}", now);
        }
    }
}
