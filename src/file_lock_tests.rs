#![expect(clippy::unwrap_used, reason = "tests")]
use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::*;

#[test]
fn a_second_holder_waits_for_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".lock");
    let first = exclusive(&path).unwrap().unwrap();
    let released = AtomicBool::new(false);
    std::thread::scope(|s| {
        let second = s.spawn(|| {
            let _held = exclusive(&path).unwrap().unwrap();
            released.load(Ordering::SeqCst)
        });
        std::thread::sleep(Duration::from_millis(100));
        released.store(true, Ordering::SeqCst);
        drop(first);
        assert!(
            second.join().unwrap(),
            "the second took the lock while the first held it"
        );
    });
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::read(&path).unwrap(), b"");
}

#[test]
fn a_lock_file_that_is_a_link_is_refused_and_its_target_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".lock");
    let elsewhere = dir.path().join("not-cordons");
    std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
    assert!(exclusive(&path).is_err());
    assert!(!elsewhere.exists());
}
