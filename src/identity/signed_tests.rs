#![expect(clippy::unwrap_used, reason = "tests")]
use super::*;
use base64::Engine;

fn signer(k: &str) -> TokenSigner {
    TokenSigner::new(&SecretString::from(k.to_string())).unwrap()
}

const KEY: &str = "0123456789abcdef0123456789abcdef";

#[test]
fn roundtrip() {
    let s = signer(KEY);
    let t = s.mint("sb-1", "n1", "alice", "web", 10, 20).unwrap();
    assert!(looks_signed(&t));
    let c = s.verify(&t).unwrap();
    assert_eq!((c.sub.as_str(), c.nonce.as_str(), c.exp), ("sb-1", "n1", 20));
}

#[test]
fn short_keys_are_refused() {
    assert!(TokenSigner::new(&SecretString::from("short".to_string())).is_err());
}

#[test]
fn another_key_forgery_and_tampering_are_refused() {
    let t = signer(KEY).mint("sb-1", "n1", "alice", "web", 10, 20).unwrap();
    assert!(signer("another-key-another-key-another-key").verify(&t).is_none());
    // Tampered claims (policy swapped) with the old signature.
    let parts: Vec<&str> = t.split('.').collect();
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let claims = String::from_utf8(b64.decode(parts[1]).unwrap()).unwrap();
    let forged = b64.encode(claims.replace("\"web\"", "\"everything\""));
    assert!(
        signer(KEY)
            .verify(&format!("{}.{forged}.{}", parts[0], parts[2]))
            .is_none()
    );
    // alg: none.
    let none = b64.encode(r#"{"alg":"none","typ":"JWT"}"#);
    assert!(signer(KEY).verify(&format!("{none}.{}.", parts[1])).is_none());
    assert!(signer(KEY).verify("garbage").is_none());
}

#[test]
fn another_audience_is_refused() {
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let claims = r#"{"sub":"a","nonce":"n","usr":"u","pol":"p","iat":1,"exp":9999999999,"aud":"other","jti":"j"}"#;
    let t = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &serde_json::from_str::<serde_json::Value>(claims).unwrap(),
        &EncodingKey::from_secret(KEY.as_bytes()),
    )
    .unwrap();
    assert!(looks_signed(&t));
    assert!(signer(KEY).verify(&t).is_none());
    let _ = b64;
}
