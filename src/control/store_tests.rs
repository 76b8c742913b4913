#![expect(clippy::unwrap_used, reason = "tests")]

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{SandboxRow, Store, StoreError};

/// A live record: created at 100, expires at 1000.
fn record(id: &str) -> SandboxRow {
    let mut labels = BTreeMap::new();
    labels.insert("team".to_owned(), "infra".to_owned());
    labels.insert("ticket".to_owned(), "OPS-1 \"quoted\"".to_owned());
    SandboxRow {
        id: crate::names::SandboxId::from(&*id.to_owned()),
        nonce: format!("nonce-{id}"),
        user: "alice".to_owned(),
        policy: "default".to_owned(),
        labels,
        created: 100,
        expires: 1000,
        revoked: None,
        source_cidrs: Vec::new(),
        inline_policy: None,
    }
}

/// A fresh folder and a store file path in a not-yet-existing subfolder of it.
fn db_path() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state").join("cordon.db");
    (dir, path)
}

#[test]
fn insert_get_all_roundtrip() {
    let (_dir, path) = db_path();
    let store = Store::open(&path).unwrap();
    assert_eq!(store.location(), path.display().to_string());
    let b = record("b");
    let mut a = record("a");
    a.labels.clear();
    a.revoked = Some(150);
    store.insert(&b, 200).unwrap();
    store.insert(&a, 200).unwrap();
    assert_eq!(store.get(&"b".into()).unwrap(), Some(b.clone()));
    assert_eq!(store.get(&"a".into()).unwrap(), Some(a.clone()));
    assert_eq!(store.get(&"c".into()).unwrap(), None);
    assert_eq!(store.all().unwrap(), vec![a, b]);
}

#[test]
fn in_memory_works() {
    let store = Store::in_memory().unwrap();
    assert_eq!(store.location(), "memory");
    store.insert(&record("a"), 200).unwrap();
    assert_eq!(store.all().unwrap().len(), 1);
}

#[test]
fn insert_over_live_is_exists() {
    let store = Store::in_memory().unwrap();
    store.insert(&record("a"), 200).unwrap();
    let mut again = record("a");
    again.nonce = "other".to_owned();
    let err = store.insert(&again, 999).unwrap_err();
    assert!(matches!(err, StoreError::Exists(ref id) if id == "a"), "{err:?}");
    assert_eq!(err.to_string(), "sandbox \"a\" already exists");
    assert_eq!(store.get(&"a".into()).unwrap().unwrap().nonce, "nonce-a");
}

#[test]
fn insert_over_revoked_or_expired_replaces() {
    let store = Store::in_memory().unwrap();
    store.insert(&record("revoked"), 200).unwrap();
    store.insert(&record("expired"), 200).unwrap();
    store.revoke(&"revoked".into(), 300).unwrap();

    let mut fresh = record("revoked");
    fresh.nonce = "fresh".to_owned();
    store.insert(&fresh, 400).unwrap();
    assert_eq!(store.get(&"revoked".into()).unwrap(), Some(fresh.clone()));

    // Expired exactly at `now` counts as expired.
    fresh.id = crate::names::SandboxId::from("expired");
    store.insert(&fresh, 1000).unwrap();
    assert_eq!(store.get(&"expired".into()).unwrap(), Some(fresh));
    assert_eq!(store.all().unwrap().len(), 2);
}

#[test]
fn renew_live_revoked_expired_unknown() {
    let store = Store::in_memory().unwrap();
    store.insert(&record("live"), 200).unwrap();
    store.insert(&record("revoked"), 200).unwrap();
    store.insert(&record("expired"), 200).unwrap();
    store.revoke(&"revoked".into(), 300).unwrap();

    let renewed = store.renew(&"live".into(), 5000, 500).unwrap();
    assert_eq!(renewed.expires, 5000);
    assert_eq!(store.get(&"live".into()).unwrap().unwrap().expires, 5000);

    for id in ["revoked", "unknown"] {
        let err = store.renew(&id.into(), 5000, 500).unwrap_err();
        assert!(matches!(err, StoreError::NotFound(ref got) if got == id), "{err:?}");
    }
    let err = store.renew(&"expired".into(), 5000, 1000).unwrap_err();
    assert!(matches!(err, StoreError::NotFound(_)), "{err:?}");
    assert_eq!(err.to_string(), "no sandbox \"expired\"");
    assert_eq!(store.get(&"expired".into()).unwrap().unwrap().expires, 1000);
    assert_eq!(store.get(&"revoked".into()).unwrap().unwrap().expires, 1000);
}

#[test]
fn revoke_is_idempotent() {
    let store = Store::in_memory().unwrap();
    store.insert(&record("a"), 200).unwrap();
    assert_eq!(store.revoke(&"a".into(), 300).unwrap().revoked, Some(300));
    assert_eq!(store.revoke(&"a".into(), 400).unwrap().revoked, Some(300));
    assert_eq!(store.get(&"a".into()).unwrap().unwrap().revoked, Some(300));
    let err = store.revoke(&"nope".into(), 300).unwrap_err();
    assert!(matches!(err, StoreError::NotFound(_)), "{err:?}");
}

#[test]
fn purge_deletes_rows_expired_before() {
    let store = Store::in_memory().unwrap();
    for (id, expires) in [("a", 100), ("b", 200), ("c", 300)] {
        let mut r = record(id);
        r.expires = expires;
        store.insert(&r, 0).unwrap();
    }
    store.revoke(&"c".into(), 50).unwrap();
    assert_eq!(store.purge(200).unwrap(), 1);
    assert_eq!(store.purge(200).unwrap(), 0);
    assert_eq!(store.purge(301).unwrap(), 2);
    assert!(store.all().unwrap().is_empty());
}

#[test]
fn reopen_keeps_data() {
    let (_dir, path) = db_path();
    {
        let store = Store::open(&path).unwrap();
        store.insert(&record("a"), 200).unwrap();
        store.revoke(&"a".into(), 300).unwrap();
        store.insert(&record("b"), 200).unwrap();
    }
    let store = Store::open(&path).unwrap();
    let all = store.all().unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].revoked, Some(300));
    assert_eq!(all[1], record("b"));
}

#[test]
fn two_stores_on_one_file_see_each_other() {
    let (_dir, path) = db_path();
    let writer = Store::open(&path).unwrap();
    let reader = Store::open(&path).unwrap();
    assert!(writer.changed_elsewhere().unwrap(), "first call is true");
    assert!(reader.changed_elsewhere().unwrap(), "first call is true");
    assert!(!reader.changed_elsewhere().unwrap());

    writer.insert(&record("a"), 200).unwrap();
    assert!(!writer.changed_elsewhere().unwrap(), "own writes do not count");
    assert!(reader.changed_elsewhere().unwrap());
    assert!(!reader.changed_elsewhere().unwrap(), "nothing changed since");
    assert_eq!(reader.get(&"a".into()).unwrap(), Some(record("a")));

    // And the other way round.
    reader.revoke(&"a".into(), 300).unwrap();
    assert!(!reader.changed_elsewhere().unwrap());
    assert!(writer.changed_elsewhere().unwrap());
    assert_eq!(writer.get(&"a".into()).unwrap().unwrap().revoked, Some(300));
    let err = writer
        .insert(&record("b"), 200)
        .and_then(|()| writer.insert(&record("b"), 200));
    assert!(matches!(err, Err(StoreError::Exists(_))));
    assert_eq!(reader.all().unwrap().len(), 2);
}

#[test]
fn garbage_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cordon.db");
    let garbage = b"this is not a database, just some bytes\n".repeat(200);
    std::fs::write(&path, &garbage).unwrap();
    let err = Store::open(&path).err().unwrap();
    let message = err.to_string();
    assert!(matches!(err, StoreError::Db(_)), "{err:?}");
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("not a database"), "{message}");
    assert_eq!(std::fs::read(&path).unwrap(), garbage, "left untouched");
}

#[test]
fn other_sqlite_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE t (x INTEGER)").unwrap();
    drop(conn);
    let message = Store::open(&path).err().unwrap().to_string();
    assert!(message.contains("something else"), "{message}");
}

#[test]
fn newer_schema_version_is_refused() {
    let (_dir, path) = db_path();
    drop(Store::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", super::SCHEMA_VERSION + 1)
        .unwrap();
    drop(conn);
    let err = Store::open(&path).err().unwrap();
    let message = err.to_string();
    assert!(matches!(err, StoreError::Db(_)), "{err:?}");
    assert!(message.contains("written by a newer cordon"), "{message}");
    assert!(message.contains(&path.display().to_string()), "{message}");
}

#[cfg(unix)]
#[test]
fn file_and_folder_modes() {
    use std::os::unix::fs::PermissionsExt;
    let (_dir, path) = db_path();
    let store = Store::open(&path).unwrap();
    store.insert(&record("a"), 200).unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    let wal = path.with_file_name("cordon.db-wal");
    assert_eq!(mode(&wal), 0o600);
}

#[test]
fn store_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Store>();
}

#[test]
fn a_version_1_store_is_migrated_and_keeps_its_records() {
    let (_dir, path) = db_path();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(super::SCHEMA_V1).unwrap();
    conn.execute(
        "INSERT INTO sandboxes (id, nonce, user, policy, labels, created, expires, revoked)
         VALUES ('old', 'n', 'alice', 'web', '{}', 1, 2000000000, NULL)",
        [],
    )
    .unwrap();
    drop(conn);
    let store = Store::open(&path).unwrap();
    let old = store.get(&"old".into()).unwrap().unwrap();
    assert_eq!((old.user.as_str(), old.source_cidrs.len()), ("alice", 0));
    assert_eq!(old.inline_policy, None);
    // And a new record with ranges round-trips.
    let mut r = record("vm");
    r.source_cidrs = vec!["10.0.0.2/32".parse().unwrap()];
    store.insert(&r, 500).unwrap();
    assert_eq!(store.get(&"vm".into()).unwrap().unwrap().source_cidrs, r.source_cidrs);
    // Another live sandbox cannot take an overlapping range; a revoked one gives it back.
    let mut twin = record("twin");
    twin.source_cidrs = vec!["10.0.0.0/24".parse().unwrap()];
    assert!(matches!(store.insert(&twin, 500), Err(StoreError::Overlap(_, _, id)) if id == "vm"));
    store.revoke(&"vm".into(), 600).unwrap();
    store.insert(&twin, 700).unwrap();
}

#[test]
fn a_policy_is_changed_on_live_sandboxes_only_and_round_trips() {
    let (_dir, path) = db_path();
    let store = Store::open(&path).unwrap();
    let mut r = record("task");
    r.inline_policy = Some(r#"{"extends":"default","allow":[{"host":"a.example"}]}"#.into());
    store.insert(&r, 500).unwrap();
    assert_eq!(
        store.get(&"task".into()).unwrap().unwrap().inline_policy,
        r.inline_policy
    );
    let changed = store.set_policy(&"task".into(), "other", None, 500).unwrap();
    assert_eq!((changed.policy.as_str(), changed.inline_policy), ("other", None));
    let doc = r#"{"extends":"other","allow":[]}"#;
    let changed = store.set_policy(&"task".into(), "other", Some(doc), 500).unwrap();
    assert_eq!(changed.inline_policy.as_deref(), Some(doc));
    // Reopened: it was written down.
    drop(store);
    let store = Store::open(&path).unwrap();
    assert_eq!(
        store.get(&"task".into()).unwrap().unwrap().inline_policy.as_deref(),
        Some(doc)
    );
    // Expired or revoked: nothing to change.
    assert!(matches!(
        store.set_policy(&"task".into(), "x", None, 1000),
        Err(StoreError::NotFound(_))
    ));
    store.revoke(&"task".into(), 600).unwrap();
    assert!(matches!(
        store.set_policy(&"task".into(), "x", None, 700),
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.set_policy(&"none".into(), "x", None, 700),
        Err(StoreError::NotFound(_))
    ));
}
