#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

#[test]
fn totals_and_what_is_unflushed_add_up_and_a_failed_flush_loses_nothing() {
    let s = SharedBytes::new(Duration::from_secs(3600));
    let a = crate::names::Incarnation::created(&"a".into(), "1");
    let b = crate::names::Incarnation::created(&"b".into(), "1");
    s.add(&a, 10, 1);
    s.add(&a, 5, 0);
    s.add(&b, 0, 0);
    assert_eq!(s.used(&a), (15, 1));
    let taken = s.take();
    assert_eq!(taken.get(a.as_str()), Some(&(15, 1)));
    assert!(!taken.contains_key(b.as_str()));
    assert_eq!(s.used(&a), (0, 0));
    s.give_back(taken);
    assert_eq!(s.used(&a), (15, 1));
    let flushed = s.take();
    // Another replica moved 100 up for a in this slot.
    let mut totals = Counts::new();
    totals.insert(a.to_string(), (115, 1));
    s.settle(s.slot_now(), totals);
    drop(flushed);
    s.add(&a, 1, 0);
    assert_eq!(s.used(&a), (116, 1));
    assert!(s.over(&a, Some(200), None, |u, b| u >= b).is_ok());
    let r = s.over(&a, Some(116), None, |u, b| u >= b).unwrap_err();
    assert_eq!(r.reason, LimitRefusal::UPLOAD_BUDGET);
    assert!(r.retry_after <= Duration::from_secs(3600) && r.message.contains("over all replicas"));
    // Totals of another slot do not count.
    s.settle(s.slot_now() - 1, Counts::new());
    assert_eq!(s.used(&a), (1, 0));
}
