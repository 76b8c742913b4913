#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

fn rate(per_second: u32, burst: u32) -> Option<Rate> {
    Some(Rate {
        per_second: NonZeroU32::new(per_second).unwrap(),
        burst: NonZeroU32::new(burst).unwrap(),
    })
}

#[test]
fn divided_by_live_replicas_rounded_up() {
    let spec = LimitSpec {
        sandbox_requests: rate(100, 10),
        user_requests: rate(7, 1),
        sandbox_open: Some(10),
        sandbox_upload: Some(1000),
        auth_failures: rate(5, 5),
        ..LimitSpec::default()
    };
    assert_eq!(spec.share(1), spec);
    assert_eq!(spec.share(0), spec);
    let third = spec.share(3);
    assert_eq!(third.sandbox_requests, rate(34, 4));
    assert_eq!(third.user_requests, rate(3, 1));
    assert_eq!(third.sandbox_open, Some(4));
    // Budgets and the authentication throttle are not divided.
    assert_eq!(third.sandbox_upload, Some(1000));
    assert_eq!(third.auth_failures, rate(5, 5));
    assert_eq!(spec.share(1000).user_requests, rate(1, 1));
}
