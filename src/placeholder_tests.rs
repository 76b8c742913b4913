#![expect(clippy::unwrap_used, reason = "tests")]
use super::*;

/// The first incarnation of the run-time sandbox `id`.
fn sandbox(id: &str) -> Incarnation {
    crate::names::Incarnation::created(&id.into(), "1")
}

#[test]
fn placeholders_differ_per_sandbox_and_credential_and_are_recognised() {
    let mut p = Placeholders::from_key(&[7u8; 32]);
    let (a, a2, b) = (
        sandbox("a"),
        crate::names::Incarnation::created(&"a".into(), "2"),
        sandbox("b"),
    );
    let (openai, github) = (CredentialName::from("openai"), CredentialName::from("github"));
    p.learn([(&a, &openai), (&b, &openai), (&a, &github)]);
    let value = p.value(&a, &openai);
    assert!(value.starts_with(PREFIX) && value.len() == PREFIX.len() + 32);
    assert_ne!(value, p.value(&b, &openai));
    assert_ne!(value, p.value(&a, &github));
    // Another incarnation of the same id (created again) has other placeholders.
    assert_ne!(value, p.value(&a2, &openai));
    // The AWS secret key is another placeholder than the key id.
    assert_ne!(value, p.aws_secret(&a, &openai));
    assert_eq!(p.owner(&value), Some(&(a.clone(), openai.clone())));
    assert_eq!(p.owner("cordon-ph-00"), None);
    // Another key, other placeholders.
    assert_ne!(value, Placeholders::from_key(&[8u8; 32]).value(&a, &openai));
}

#[test]
fn key_file_is_created_0600_and_reused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/placeholder.key");
    let a = Placeholders::load(&path).unwrap().value(&sandbox("s"), &"c".into());
    let b = Placeholders::load(&path).unwrap().value(&sandbox("s"), &"c".into());
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
                    Placeholders::load(&path)
                        .unwrap()
                        .value(&sandbox("a"), &"openai".into())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(values.iter().all(|v| *v == values[0]), "{values:?}");
    assert_eq!(
        Placeholders::load(&path)
            .unwrap()
            .value(&sandbox("a"), &"openai".into()),
        values[0]
    );
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
