#![expect(clippy::unwrap_used, reason = "tests")]
use super::*;

const HOUR: Duration = Duration::from_secs(3600);

#[test]
fn exactly_the_budgeted_requests_pass_and_the_first_refusal_is_marked() {
    let b = CredentialBudgets::default();
    let budget = Budget {
        requests: Some(3),
        bytes: None,
        window: HOUR,
    };
    for _ in 0..3 {
        b.take("gh", "sb1", &budget).unwrap();
    }
    let first = b.take("gh", "sb1", &budget).unwrap_err();
    assert!(first.first);
    assert_eq!(first.refusal.reason, "credential_budget");
    assert!(first.refusal.retry_after <= HOUR && first.refusal.retry_after.as_secs() >= 1);
    assert!(
        !b.take("gh", "sb1", &budget).unwrap_err().first,
        "announced once per window"
    );
    // Another subject, another credential, or the same under another window: counted apart.
    b.take("gh", "sb2", &budget).unwrap();
    b.take("other", "sb1", &budget).unwrap();
    let daily = Budget {
        window: HOUR * 24,
        ..budget
    };
    b.take("gh", "sb1", &daily).unwrap();
}

#[test]
fn the_exchange_that_crosses_a_byte_budget_completes_and_the_next_is_refused() {
    let b = CredentialBudgets::default();
    let budget = Budget {
        requests: None,
        bytes: Some(1000),
        window: HOUR,
    };
    b.take("gh", "alice", &budget).unwrap();
    b.add_bytes("gh", "alice", &budget, 600);
    b.take("gh", "alice", &budget).unwrap();
    b.add_bytes("gh", "alice", &budget, 600);
    let spent = b.take("gh", "alice", &budget).unwrap_err();
    assert!(
        spent.refusal.message.contains("1000 bytes"),
        "{}",
        spent.refusal.message
    );
}

#[test]
fn concurrent_takes_never_pass_more_than_the_budget() {
    let b = std::sync::Arc::new(CredentialBudgets::default());
    let budget = Budget {
        requests: Some(500),
        bytes: None,
        window: HOUR,
    };
    let passed: usize = (0..8)
        .map(|_| {
            let b = b.clone();
            std::thread::spawn(move || (0..200).filter(|_| b.take("gh", "sb", &budget).is_ok()).count())
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .sum();
    assert_eq!(passed, 500);
}
