#![expect(clippy::unwrap_used, reason = "tests")]

use std::num::NonZeroU32;
use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::identity::Origin;

fn sandbox(user: &str) -> Arc<Sandbox> {
    Arc::new(Sandbox::new("sb1".into(), user.into(), "p".into(), Origin::Config))
}

fn request(who: &Arc<Sandbox>, now: i64, lifetime: u64) -> AccessRequest {
    AccessRequest {
        id: AccessBook::fresh_id(),
        who: who.clone(),
        sandbox: "sb1".into(),
        user: who.user.clone(),
        policy: "p".into(),
        allow: json!([{"host": "a.test"}]),
        reason: "r".into(),
        lifetime_seconds: lifetime,
        adds: Vec::new(),
        reaches_credentials: false,
        state: AccessState::Pending,
        filed_at: crate::rfc3339::unix_seconds(now),
        decided_by: None,
        decided_at: None,
        expires_at: None,
        filed: now,
        expires: None,
    }
}

#[test]
fn a_request_is_decided_once_and_its_grant_lives_its_lifetime_for_its_incarnation_alone() {
    let book = AccessBook::default();
    let alice = sandbox("alice");
    let r = request(&alice, 1000, 60);
    let id = r.id.clone();
    book.file(r, 1000).unwrap();
    assert!(book.granted(&alice, 1000).is_empty(), "pending grants nothing");
    let granted = book.decide(&id, true, "anna", 1010).unwrap();
    assert_eq!((granted.state, granted.expires), (AccessState::Granted, Some(1070)));
    assert_eq!(
        book.decide(&id, false, "bob", 1011).unwrap_err(),
        NotDecided::State(AccessState::Granted)
    );
    assert_eq!(book.granted(&alice, 1069).len(), 1);
    // Another incarnation of the same id gets nothing.
    assert!(book.granted(&sandbox("bob"), 1020).is_empty());
    // At its end it is over, and listed as expired.
    assert!(book.granted(&alice, 1070).is_empty());
    assert_eq!(book.get(&id, 1070).unwrap().state, AccessState::Expired);
    assert_eq!(
        book.revoke(&id, "anna", 1071).unwrap_err(),
        NotDecided::State(AccessState::Expired)
    );
    assert_eq!(
        book.decide("ar-0000000000000000", true, "anna", 1).unwrap_err(),
        NotDecided::Unknown
    );
}

#[test]
fn revoking_and_the_sandbox_ending_end_a_grant_and_the_hot_path_count_follows() {
    let book = AccessBook::default();
    let alice = sandbox("alice");
    let (a, b) = (request(&alice, 0, 600), request(&alice, 0, 600));
    let (ida, idb) = (a.id.clone(), b.id.clone());
    book.file(a, 0).unwrap();
    book.file(b, 0).unwrap();
    book.decide(&ida, true, "anna", 1).unwrap();
    book.decide(&idb, true, "anna", 1).unwrap();
    assert_eq!(book.granted.load(Ordering::SeqCst), 2);
    assert_eq!(book.revoke(&ida, "anna", 2).unwrap().state, AccessState::Revoked);
    assert_eq!(book.granted(&alice, 3).len(), 1);
    assert!(book.sweep(4, |_| false), "its sandbox gone, the grant ends");
    assert!(book.granted(&alice, 5).is_empty());
    assert_eq!(
        book.granted.load(Ordering::SeqCst),
        0,
        "no lock is taken while none is granted"
    );
    let b = book.get(&idb, 5).unwrap();
    assert_eq!((b.state, b.decided_by.as_deref()), (AccessState::Expired, Some("anna")));
}

#[test]
fn waiting_requests_are_bounded_per_sandbox_and_asking_per_hour() {
    let book = AccessBook::default();
    let alice = sandbox("alice");
    for _ in 0..MOST_PENDING_PER_SANDBOX {
        book.file(request(&alice, 0, 60), 0).unwrap();
    }
    assert_eq!(book.file(request(&alice, 0, 60), 0), Err(NotFiled::TooManyWaiting));
    // Another sandbox still may.
    book.file(request(&sandbox("bob"), 0, 60), 0).unwrap();
    // Undecided for a day, a request lapses and makes room.
    assert_eq!(book.list(PENDING_FOR)[0].state, AccessState::Lapsed);
    book.file(request(&alice, PENDING_FOR, 60), PENDING_FOR).unwrap();
    let per_hour = NonZeroU32::new(2).unwrap();
    let id: crate::names::SandboxId = "sb1".into();
    assert!(book.count(&id, per_hour).is_ok() && book.count(&id, per_hour).is_ok());
    assert_eq!(book.count(&id, per_hour), Err(NotFiled::TooOften(2)));
    assert!(book.count(&"sb2".into(), per_hour).is_ok(), "counted per sandbox");
}
