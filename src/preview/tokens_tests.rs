#![expect(clippy::unwrap_used, reason = "tests")]

use std::time::{SystemTime, UNIX_EPOCH};

use super::*;

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

fn claims(exp: u64) -> Claims {
    Claims::new(
        "pv-1".into(),
        ("sb1".into(), "sb1@alice".into()),
        3000,
        "alice".into(),
        exp,
    )
}

#[test]
fn a_link_is_a_link_and_a_session_a_session() {
    let s = LinkSigner::new(b"0123456789abcdef0123456789abcdef");
    let link = s.link(&claims(now() + 60)).unwrap();
    let session = s.session(&claims(now() + 60)).unwrap();
    assert_eq!(s.check_link(&link).unwrap().sbx, "sb1");
    assert_eq!(s.check_session(&session).unwrap().user, "alice");
    assert!(s.check_session(&link).is_none(), "a link is not a session");
    assert!(s.check_link(&session).is_none(), "a session is not a link");
}

#[test]
fn expired_altered_or_foreign_tokens_are_refused() {
    let s = LinkSigner::new(b"0123456789abcdef0123456789abcdef");
    assert!(s.check_link(&s.link(&claims(now() - 1)).unwrap()).is_none(), "expired");
    let other = LinkSigner::new(b"another key, another key, another");
    assert!(
        s.check_link(&other.link(&claims(now() + 60)).unwrap()).is_none(),
        "another key"
    );
    let link = s.link(&claims(now() + 60)).unwrap();
    let (head, rest) = link.split_once('.').unwrap();
    let (_, sig) = rest.split_once('.').unwrap();
    let forged = serde_json::json!({"pid": "pv-1", "sbx": "sb2", "port": 3000, "user": "alice", "exp": now() + 60, "aud": "cordon-preview-link"});
    let body = base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, forged.to_string());
    assert!(
        s.check_link(&format!("{head}.{body}.{sig}")).is_none(),
        "altered claims"
    );
    let none = base64::Engine::encode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        r#"{"alg":"none","typ":"JWT"}"#,
    );
    assert!(s.check_link(&format!("{none}.{body}.")).is_none(), "alg none");
    assert!(s.check_link("garbage").is_none());
}
