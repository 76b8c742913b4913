#![expect(clippy::unwrap_used, reason = "tests")]
use super::*;

#[test]
fn processes_creating_it_at_once_all_read_the_one_value() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("shared/signing-key");
    for round in 0..20 {
        let _ = std::fs::remove_file(&p);
        let barrier = std::sync::Barrier::new(8);
        let racers: Vec<(bool, Vec<u8>)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8u8)
                .map(|i| {
                    let (p, barrier) = (&p, &barrier);
                    s.spawn(move || {
                        barrier.wait();
                        let made = create_once(p, &[i; 32]).unwrap();
                        // Whoever finds the file in place finds it whole.
                        (made, std::fs::read(p).unwrap())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(racers.iter().filter(|(made, _)| *made).count(), 1, "round {round}");
        let value = std::fs::read(&p).unwrap();
        assert_eq!(value.len(), 32);
        assert!(
            racers.iter().all(|(_, seen)| *seen == value),
            "round {round}: {racers:?}"
        );
    }
    let leftovers = std::fs::read_dir(p.parent().unwrap()).unwrap().count();
    assert_eq!(leftovers, 1, "no temporary file is left behind");
}

#[cfg(unix)]
#[test]
fn it_is_private_from_the_start_and_never_replaced() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("sub/admin-token");
    assert!(create_once(&p, b"first\n").unwrap());
    assert!(!create_once(&p, b"second\n").unwrap());
    assert_eq!(std::fs::read(&p).unwrap(), b"first\n");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&p), 0o600);
    assert_eq!(mode(p.parent().unwrap()), 0o700);
}

#[cfg(unix)]
#[test]
fn a_replaced_file_is_private_and_leaves_no_temporary() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("sub/vault.bin");
    replace(&p, b"one").unwrap();
    replace(&p, b"two").unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b"two");
    assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::read_dir(p.parent().unwrap()).unwrap().count(), 1);
}
