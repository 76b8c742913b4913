#![expect(clippy::unwrap_used, reason = "tests")]
use super::*;

fn cap(tokens: u64) -> Cap {
    Cap::new("sandbox:a@u".into(), Duration::from_secs(60), Some(tokens), None)
}

#[tokio::test]
async fn a_budget_is_spent_when_all_of_it_is_used_and_renews_with_its_slot() {
    let ledger = MemoryLedger::default();
    let caps = [cap(100)];
    let a = ledger.admit(&caps, 120).await.unwrap().unwrap();
    assert_eq!(a.slots, vec![("sandbox:a@u".to_string(), 2, 180)]);
    ledger.charge(&a, 99, 0).await;
    let b = ledger.admit(&caps, 130).await.unwrap().unwrap();
    // The answer that crosses is counted whole.
    ledger.charge(&b, 50, 0).await;
    let spent = ledger.admit(&caps, 170).await.unwrap().unwrap_err();
    assert_eq!(spent.used.tokens, 149);
    assert_eq!(spent.retry_after, Duration::from_secs(10));
    assert!(ledger.admit(&caps, 180).await.unwrap().is_ok());
    ledger.housekeep(180);
    assert_eq!(ledger.used(&caps[0], 175).await.unwrap(), ModelUsed::default());
}

#[tokio::test]
async fn one_spent_cap_admits_against_none() {
    let ledger = MemoryLedger::default();
    let user = Cap::new("user:u".into(), Duration::from_secs(60), None, Some(10));
    let a = ledger.admit(std::slice::from_ref(&user), 0).await.unwrap().unwrap();
    ledger.charge(&a, 1, 10).await;
    let both = [cap(100), user.clone()];
    let spent = ledger.admit(&both, 1).await.unwrap().unwrap_err();
    assert_eq!(spent.cap.key, "user:u");
    assert_eq!(ledger.used(&both[0], 1).await.unwrap().requests, 0);
}
