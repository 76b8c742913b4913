#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;
use crate::principal::{Role, Roles, Via};

fn flow(state: &str) -> Flow {
    Flow {
        state: state.into(),
        nonce: "n".into(),
        verifier: secrecy::SecretString::from("v"),
    }
}

#[test]
fn a_sign_in_finishes_once_and_only_in_the_browser_that_started_it() {
    let s = SignIns::new(Duration::from_secs(60));
    s.started(flow("st-1"), "browser-a");
    assert!(s.finish("st-1", Some("browser-b")).is_err(), "another browser");
    // A refused try used the state up: nobody can finish it afterwards either.
    assert!(s.finish("st-1", Some("browser-a")).is_err());
    s.started(flow("st-2"), "browser-a");
    assert!(s.finish("st-2", None).is_err(), "no binding cookie");
    s.started(flow("st-3"), "browser-a");
    assert_eq!(s.finish("st-3", Some("browser-a")).unwrap().state, "st-3");
    assert!(s.finish("st-3", Some("browser-a")).is_err(), "a state answers once");
    assert!(s.finish("never", Some("browser-a")).is_err());
}

#[test]
fn sessions_are_found_by_their_cookie_until_closed() {
    let s = SignIns::new(Duration::from_secs(60));
    let anna = Principal {
        name: "anna".into(),
        roles: Roles::of([Role::Approver]),
        via: Via::Oidc,
    };
    let (value, session) = s.open(anna.clone(), Proof::Person(vec!["g".into()])).unwrap();
    assert_eq!(value.len(), 64);
    assert_ne!(session.csrf, value, "the CSRF token is not the cookie");
    assert_eq!(session.place.len(), 32);
    let (_, other) = s.open(anna.clone(), Proof::Person(vec![])).unwrap();
    assert_ne!(session.place, other.place, "every session has a place of its own");
    assert_eq!(s.get(&value).unwrap().principal, anna);
    assert!(s.get("not-the-cookie").is_none());
    s.close(&value);
    assert!(s.get(&value).is_none());
    assert!(!same("", ""), "an empty token matches nothing");
    assert!(same("abc", "abc") && !same("abc", "abd"));
}

#[test]
fn cookies_are_read_by_exact_name() {
    let mut h = HeaderMap::new();
    h.insert(
        http::header::COOKIE,
        "xcordon_console=evil; cordon_console=good; other=1".parse().unwrap(),
    );
    assert_eq!(cookie(&h, "cordon_console").as_deref(), Some("good"));
    let set = CookieNames::new(true).set("__Host-cordon_console", "v", SameSite::Strict, Duration::from_secs(5));
    for part in [
        "__Host-cordon_console=v",
        "HttpOnly",
        "SameSite=Strict",
        "Secure",
        "Path=/",
        "Max-Age=5",
    ] {
        assert!(set.contains(part), "{set}");
    }
    let plain = CookieNames::new(false).set("cordon_console", "v", SameSite::Strict, Duration::from_secs(5));
    assert!(!plain.contains("Secure"), "{plain}");
    // The session's cookie is sent to its place alone: `__Secure-` over TLS (`__Host-` requires Path=/).
    let session = CookieNames::new(true).session("v", "abc", Duration::from_secs(5));
    for part in [
        "__Secure-cordon_console=v",
        "Path=/console/s/abc",
        "Secure",
        "HttpOnly",
        "SameSite=Strict",
    ] {
        assert!(session.contains(part), "{session}");
    }
    let session = CookieNames::new(false).session("v", "abc", Duration::from_secs(5));
    assert!(
        session.starts_with("cordon_console=v") && session.contains("Path=/console/s/abc"),
        "{session}"
    );
}
