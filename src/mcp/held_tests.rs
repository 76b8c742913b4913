#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

/// The incarnation of the run-time sandbox `id` (what a share is held for).
fn incarnation(id: &str) -> Incarnation {
    crate::names::Incarnation::created(&id.into(), "1")
}

#[test]
fn shares_are_bounded_per_sandbox_and_in_all_and_given_back() {
    let held = Arc::new(Held::default());
    let mut a = Share::new(held.clone(), incarnation("a"));
    a.grow(MOST_HELD_PER_SANDBOX, usize::MAX, "x").unwrap();
    // The same sandbox, another answer: over its share.
    let mut a2 = Share::new(held.clone(), incarnation("a"));
    assert!(a2.grow(1, usize::MAX, "x").unwrap_err().contains("sandbox"));
    // Other sandboxes, up to the whole.
    let mut others: Vec<Share> = (0..3)
        .map(|i| {
            let mut s = Share::new(held.clone(), incarnation(&format!("b{i}")));
            s.grow(MOST_HELD_PER_SANDBOX, usize::MAX, "x").unwrap();
            s
        })
        .collect();
    let mut c = Share::new(held.clone(), incarnation("c"));
    assert!(c.grow(1, usize::MAX, "x").unwrap_err().contains("in all"));
    // One share's own bound.
    assert!(c.grow(0, 0, "an event").is_ok());
    others.pop();
    c.grow(10, usize::MAX, "x").unwrap();
    assert!(
        c.grow(1, 10, "an event")
            .unwrap_err()
            .contains("an event over 10 bytes")
    );
    a.release();
    a2.grow(1, usize::MAX, "x").unwrap();
    drop((a, a2, c, others));
    assert_eq!(held.all(), 0);
}
