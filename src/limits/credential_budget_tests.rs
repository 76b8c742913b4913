#![expect(clippy::unwrap_used, reason = "tests")]
use super::*;

const HOUR: Duration = Duration::from_secs(3600);

#[test]
fn exactly_the_budgeted_requests_pass_and_the_first_refusal_is_marked() {
    let b = CredentialBudgetCounts::default();
    let budget = Budget {
        requests: Some(3),
        bytes: None,
        window: HOUR,
    };
    for _ in 0..3 {
        b.take(&"gh".into(), "sb1", &budget).unwrap();
    }
    let first = b.take(&"gh".into(), "sb1", &budget).unwrap_err();
    assert!(first.first);
    assert_eq!(first.refusal.reason.code(), "credential_budget");
    assert!(first.refusal.retry_after <= HOUR && first.refusal.retry_after.as_secs() >= 1);
    assert!(
        !b.take(&"gh".into(), "sb1", &budget).unwrap_err().first,
        "announced once per window"
    );
    // Another subject, another credential, or the same under another window: counted apart.
    b.take(&"gh".into(), "sb2", &budget).unwrap();
    b.take(&"other".into(), "sb1", &budget).unwrap();
    let daily = Budget {
        window: HOUR * 24,
        ..budget
    };
    b.take(&"gh".into(), "sb1", &daily).unwrap();
}

#[test]
fn the_exchange_that_crosses_a_byte_budget_completes_and_the_next_is_refused() {
    let b = CredentialBudgetCounts::default();
    let budget = Budget {
        requests: None,
        bytes: Some(1000),
        window: HOUR,
    };
    b.take(&"gh".into(), "alice", &budget).unwrap();
    b.add_bytes(&"gh".into(), "alice", &budget, 600);
    b.take(&"gh".into(), "alice", &budget).unwrap();
    b.add_bytes(&"gh".into(), "alice", &budget, 600);
    let spent = b.take(&"gh".into(), "alice", &budget).unwrap_err();
    assert!(
        spent.refusal.message.contains("1000 bytes"),
        "{}",
        spent.refusal.message
    );
}

#[test]
fn concurrent_takes_never_pass_more_than_the_budget() {
    let b = std::sync::Arc::new(CredentialBudgetCounts::default());
    let budget = Budget {
        requests: Some(500),
        bytes: None,
        window: HOUR,
    };
    let passed: usize = (0..8)
        .map(|_| {
            let b = b.clone();
            std::thread::spawn(move || (0..200).filter(|_| b.take(&"gh".into(), "sb", &budget).is_ok()).count())
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .sum();
    assert_eq!(passed, 500);
}

#[test]
fn shared_totals_count_with_what_is_counted_here_and_a_failed_write_goes_again() {
    let b = CredentialBudgetCounts::default();
    let budget = Budget {
        requests: Some(10),
        bytes: None,
        window: HOUR,
    };
    for _ in 0..3 {
        b.take(&"gh".into(), "sb", &budget).unwrap();
    }
    let sent = b.take_unflushed();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].requests, 3);
    assert_eq!(sent[0].ends % 3600, 0);
    // The write failed: the counts wait for the next flush, and still count here meanwhile.
    b.flushed(false);
    assert_eq!(b.take_unflushed()[0].requests, 3);
    b.flushed(true);
    // Another replica used 6 more: the store says 9 in all; one is left.
    let key = sent[0].key.clone();
    b.settle(vec![(key.clone(), sent[0].slot, 9, 0)]);
    b.take(&"gh".into(), "sb", &budget).unwrap();
    assert!(b.take(&"gh".into(), "sb", &budget).is_err());
    // A key only other replicas used is known here too.
    let other = key.replace("\u{1f}sb\u{1f}", "\u{1f}sb2\u{1f}");
    b.settle(vec![(other, sent[0].slot, 10, 0)]);
    assert!(b.take(&"gh".into(), "sb2", &budget).is_err());
    assert!(b.take_unflushed().iter().all(|u| u.key == key));
}
