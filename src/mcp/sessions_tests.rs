#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

#[test]
fn a_session_is_the_first_sandboxs_and_no_other_may_use_it() {
    let (a1, a2, b1) = (
        Incarnation::created(&"a".into(), "1"),
        Incarnation::created(&"a".into(), "2"),
        Incarnation::created(&"b".into(), "1"),
    );
    let s = McpSessions::default();
    s.bind("https://mcp.test:443", "abc", &a1).unwrap();
    s.bind("https://mcp.test:443", "abc", &a1).unwrap();
    assert_eq!(s.bind("https://mcp.test:443", "abc", &b1), Err(Refusal::Foreign));
    // Another incarnation of the same sandbox id is another sandbox.
    assert_eq!(s.bind("https://mcp.test:443", "abc", &a2), Err(Refusal::Foreign));
    // The same id at another server is another session.
    s.bind("https://other.test:443", "abc", &b1).unwrap();
    for bad in ["", "a b", "a\u{e9}", "a\tb", &"x".repeat(1025)] {
        assert!(
            matches!(s.bind("https://mcp.test:443", bad, &a1), Err(Refusal::Malformed(_))),
            "{bad:?}"
        );
    }
}

#[test]
fn one_sandbox_cannot_crowd_out_anothers_bindings() {
    let (a1, b1) = (
        Incarnation::created(&"a".into(), "1"),
        Incarnation::created(&"b".into(), "1"),
    );
    let s = McpSessions::default();
    s.bind("o", "victim", &a1).unwrap();
    for i in 0..MOST_PER_SANDBOX {
        s.bind("o", &format!("flood{i}"), &b1).unwrap();
    }
    assert_eq!(s.bind("o", "one-more", &b1), Err(Refusal::TooMany));
    assert_eq!(s.bind("o", "victim", &b1), Err(Refusal::Foreign));
    // Idle bindings go, and their places with them.
    let later = Instant::now() + IDLE + Duration::from_secs(1);
    s.inner.lock().unwrap().sweep(later);
    assert!(s.inner.lock().unwrap().bound.is_empty());
    s.bind("o", "one-more", &b1).unwrap();
    // A session its sandbox ended frees its place; another sandbox cannot end it.
    s.bind("o", "x", &a1).unwrap();
    s.end("o", "x", &b1);
    assert_eq!(s.bind("o", "x", &b1), Err(Refusal::Foreign));
    s.end("o", "x", &a1);
    assert!(!s.inner.lock().unwrap().counts.contains_key(&a1));
}

#[test]
fn the_older_transports_session_ids_are_read_from_the_endpoints_query() {
    let id = "0f5d3c2e9a7b4c1d8e6f2a3b4c5d6e7f";
    for endpoint in [
        format!("/messages/?session_id={id}"),
        format!("https://mcp.test:8443/messages?sessionId={id}"),
        format!(" messages?x=1&sessionId={id}#frag\n"),
    ] {
        assert_eq!(ids_in_endpoint(&endpoint), [id], "{endpoint}");
    }
    // Percent-encoded, it is the same id.
    assert_eq!(ids_in_query(&format!("session_id={}", id.replace('f', "%66"))), [id]);
    // Short values (a version, a flag) and a URL with no query are no session.
    assert!(ids_in_query("v=2&debug=true").is_empty());
    assert!(ids_in_endpoint("/messages/").is_empty());
    let (a1, b1) = (
        Incarnation::created(&"a".into(), "1"),
        Incarnation::created(&"b".into(), "1"),
    );
    let s = McpSessions::default();
    s.bind("o", id, &a1).unwrap();
    assert!(s.foreign("o", id, &b1) && !s.foreign("o", id, &a1) && !s.foreign("p", id, &b1));
}
