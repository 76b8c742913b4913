#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

#[test]
fn a_session_is_the_first_sandboxs_and_no_other_may_use_it() {
    let s = Sessions::default();
    s.bind("https://mcp.test:443", "abc", "a#1").unwrap();
    s.bind("https://mcp.test:443", "abc", "a#1").unwrap();
    assert_eq!(s.bind("https://mcp.test:443", "abc", "b#1"), Err(Refusal::Foreign));
    // Another incarnation of the same sandbox id is another sandbox.
    assert_eq!(s.bind("https://mcp.test:443", "abc", "a#2"), Err(Refusal::Foreign));
    // The same id at another server is another session.
    s.bind("https://other.test:443", "abc", "b#1").unwrap();
    for bad in ["", "a b", "a\u{e9}", "a\tb", &"x".repeat(1025)] {
        assert!(
            matches!(s.bind("https://mcp.test:443", bad, "a#1"), Err(Refusal::Malformed(_))),
            "{bad:?}"
        );
    }
}

#[test]
fn one_sandbox_cannot_crowd_out_anothers_bindings() {
    let s = Sessions::default();
    s.bind("o", "victim", "a#1").unwrap();
    for i in 0..MOST_PER_SANDBOX {
        s.bind("o", &format!("flood{i}"), "b#1").unwrap();
    }
    assert_eq!(s.bind("o", "one-more", "b#1"), Err(Refusal::TooMany));
    assert_eq!(s.bind("o", "victim", "b#1"), Err(Refusal::Foreign));
    // Idle bindings go, and their places with them.
    let later = Instant::now() + IDLE + Duration::from_secs(1);
    s.inner.lock().unwrap().sweep(later);
    assert!(s.inner.lock().unwrap().bound.is_empty());
    s.bind("o", "one-more", "b#1").unwrap();
    // A session its sandbox ended frees its place; another sandbox cannot end it.
    s.bind("o", "x", "a#1").unwrap();
    s.end("o", "x", "b#1");
    assert_eq!(s.bind("o", "x", "b#1"), Err(Refusal::Foreign));
    s.end("o", "x", "a#1");
    assert!(!s.inner.lock().unwrap().counts.contains_key("a#1"));
}
