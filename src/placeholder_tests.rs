#![expect(clippy::unwrap_used, reason = "tests")]
use super::*;

#[test]
fn placeholders_differ_per_sandbox_and_credential_and_are_recognised() {
    let mut p = Placeholders::from_key(&[7u8; 32]);
    p.learn([("a", "openai"), ("b", "openai"), ("a", "github")]);
    let a = p.value("a", "openai");
    assert!(a.starts_with(PREFIX) && a.len() == PREFIX.len() + 32);
    assert_ne!(a, p.value("b", "openai"));
    assert_ne!(a, p.value("a", "github"));
    assert_eq!(p.owner(&a), Some(&("a".to_string(), "openai".to_string())));
    assert_eq!(p.owner("cordon-ph-00"), None);
    // Another key, other placeholders.
    assert_ne!(a, Placeholders::from_key(&[8u8; 32]).value("a", "openai"));
}

#[test]
fn key_file_is_created_0600_and_reused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/placeholder.key");
    let a = Placeholders::load(&path).unwrap().value("s", "c");
    let b = Placeholders::load(&path).unwrap().value("s", "c");
    assert_eq!(a, b);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }
}

#[test]
fn replicas_loading_a_new_key_at_once_issue_the_same_placeholders() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state/placeholder.key");
    let barrier = std::sync::Barrier::new(8);
    let values: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    Placeholders::load(&path).unwrap().value("a", "openai")
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(values.iter().all(|v| *v == values[0]), "{values:?}");
    assert_eq!(Placeholders::load(&path).unwrap().value("a", "openai"), values[0]);
}

#[test]
fn placeholders_are_redacted_wherever_they_appear() {
    let p = "cordon-ph-0123456789abcdef0123456789abcdef";
    assert_eq!(
        redact(&format!("key={p}&b={p}x")),
        "key=cordon-ph-[redacted]&b=cordon-ph-[redacted]x"
    );
    assert_eq!(redact("cordon-ph-"), "cordon-ph-");
    assert_eq!(redact("no placeholder"), "no placeholder");
}
