#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

#[test]
fn a_user_takes_at_most_so_many_places_and_gets_one_back_when_a_jail_ends() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state/jails.db");
    let a = take(&file, &crate::names::SandboxId::from("a"), "alice", 2, false).unwrap();
    let _b = take(&file, &crate::names::SandboxId::from("b"), "alice", 2, false).unwrap();
    let e = take(&file, &crate::names::SandboxId::from("c"), "alice", 2, false)
        .err()
        .unwrap();
    assert!(
        e.contains("user alice runs 2 jail(s) on this host already (sandboxes a, b)"),
        "{e}"
    );
    assert!(e.contains("limits.per_user.jails (2)"), "{e}");
    let _bob = take(&file, &crate::names::SandboxId::from("d"), "bob", 2, false).unwrap();
    drop(a);
    let _c = take(&file, &crate::names::SandboxId::from("c"), "alice", 2, false).unwrap();
}

#[test]
fn the_places_of_jails_that_are_gone_are_given_back() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("jails.db");
    drop(take(&file, &crate::names::SandboxId::from("x"), "alice", 1, false).unwrap());
    // A row left by a jail that was killed (its process gone): pid 1's start time is not 12345.
    let conn = Connection::open(&file).unwrap();
    conn.execute(
        "INSERT INTO jails (sandbox, user, pid, started) VALUES ('old', 'alice', 1, 12345)",
        [],
    )
    .unwrap();
    assert!(take(&file, &crate::names::SandboxId::from("y"), "alice", 1, false).is_ok());
}

#[test]
fn jails_starting_at_once_cannot_both_take_the_last_place() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("jails.db");
    drop(take(&file, &crate::names::SandboxId::from("warm"), "alice", 1, false).unwrap());
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
    let tries: Vec<_> = (0..8)
        .map(|i| {
            let (file, barrier) = (file.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                take(
                    &file,
                    &crate::names::SandboxId::from(format!("s{i}").as_str()),
                    "alice",
                    1,
                    false,
                )
                .ok()
            })
        })
        .collect();
    let places: Vec<Place> = tries.into_iter().filter_map(|t| t.join().unwrap()).collect();
    assert_eq!(places.len(), 1, "exactly one of eight took the one place");
}

#[test]
fn a_control_store_that_does_not_exist_yet_is_made_a_store_the_proxy_then_opens() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state/cordon.db");
    let place = take(&file, &crate::names::SandboxId::from("a"), "alice", 1, true).unwrap();
    // The jail's own proxy opens the same file as its sandbox store while the place is held.
    let store = crate::control::store::Store::open(&file);
    assert!(store.is_ok(), "{:?}", store.err());
    drop(place);
    // A store that was one already takes a place too.
    assert!(take(&file, &crate::names::SandboxId::from("b"), "alice", 1, true).is_ok());
}
