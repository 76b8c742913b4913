#![expect(clippy::unwrap_used, clippy::panic, reason = "tests")]

use jsonwebtoken::jwk::{
    AlgorithmParameters, CommonParameters, EllipticCurve, EllipticCurveKeyParameters, EllipticCurveKeyType, Jwk,
    JwkSet, OctetKeyParameters, OctetKeyType,
};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

use super::*;
use crate::principal::Role;

const ISSUER: &str = "https://login.example.test";
const CLIENT: &str = "cordon-console";
const NONCE: &str = "n-0123456789";

/// A P-256 key: what signs, and its public JWK under `kid`.
fn key(kid: &str) -> (EncodingKey, Jwk) {
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let public = pair.public_key().as_ref();
    let b64 = |b: &[u8]| base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, b);
    let jwk = Jwk {
        common: CommonParameters {
            key_id: Some(kid.into()),
            ..CommonParameters::default()
        },
        algorithm: AlgorithmParameters::EllipticCurve(EllipticCurveKeyParameters {
            key_type: EllipticCurveKeyType::EC,
            curve: EllipticCurve::P256,
            x: b64(&public[1..33]),
            y: b64(&public[33..65]),
        }),
    };
    (EncodingKey::from_ec_der(pkcs8.as_ref()), jwk)
}

fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64
}

fn claims() -> Value {
    json!({"iss": ISSUER, "aud": CLIENT, "sub": "anna", "email": "anna@example.test", "email_verified": true,
           "groups": ["cordon-approvers"], "nonce": NONCE, "iat": now(), "exp": now() + 300})
}

fn sign(key: &EncodingKey, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(kid.into());
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

fn verify(keys: &JwkSet, token: &str) -> Result<Map<String, Value>, SignInError> {
    Verifier {
        issuer: ISSUER,
        client_id: CLIENT,
        algorithms: &[Algorithm::ES256, Algorithm::RS256],
        keys,
    }
    .verify(token, NONCE)
}

fn refused(keys: &JwkSet, token: &str) -> String {
    match verify(keys, token) {
        Err(SignInError::IdToken(why)) => why,
        other => panic!("not refused as an ID token: {other:?}"),
    }
}

#[test]
fn a_token_of_the_provider_for_this_sign_in_is_accepted() {
    let (enc, jwk) = key("k1");
    let keys = JwkSet { keys: vec![jwk] };
    let got = verify(&keys, &sign(&enc, "k1", &claims())).unwrap();
    assert_eq!(got["sub"], "anna");
}

#[test]
fn every_way_a_token_can_be_wrong_is_refused_with_its_reason() {
    let (enc, jwk) = key("k1");
    let (other, _) = key("k1");
    let keys = JwkSet { keys: vec![jwk] };
    let with = |k: &str, v: Value| {
        let mut c = claims();
        c[k] = v;
        sign(&enc, "k1", &c)
    };
    let without = |k: &str| {
        let mut c = claims();
        c.as_object_mut().unwrap().remove(k);
        sign(&enc, "k1", &c)
    };
    let good = sign(&enc, "k1", &claims());
    // One character of the signature changed.
    let (head, sig) = good.rsplit_once('.').unwrap();
    let flipped = if sig.starts_with('A') { "B" } else { "A" };
    let tampered = format!("{head}.{flipped}{}", &sig[1..]);
    // The payload changed under the same signature.
    let parts: Vec<&str> = good.split('.').collect();
    let mut c = claims();
    c["groups"] = json!(["cordon-admins"]);
    let body = base64::Engine::encode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        serde_json::to_vec(&c).unwrap(),
    );
    let swapped = format!("{}.{body}.{}", parts[0], parts[2]);
    // Unsigned.
    let none_head = base64::Engine::encode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        br#"{"alg":"none","typ":"JWT","kid":"k1"}"#,
    );
    let unsigned = format!("{none_head}.{}.", parts[1]);
    let cases: Vec<(&str, String, &str)> = vec![
        ("tampered signature", tampered, "signature does not verify"),
        ("payload swapped", swapped, "signature does not verify"),
        (
            "another key",
            sign(&other, "k1", &claims()),
            "signature does not verify",
        ),
        ("unknown kid", sign(&enc, "k9", &claims()), "does not hold"),
        ("expired", with("exp", json!(now() - 600)), "expired"),
        ("not yet valid", with("nbf", json!(now() + 600)), "not valid yet"),
        (
            "another issuer",
            with("iss", json!("https://evil.example")),
            "another issuer",
        ),
        ("another audience", with("aud", json!("someone-else")), "another client"),
        ("another nonce", with("nonce", json!("not-the-nonce")), "nonce"),
        ("no nonce", without("nonce"), "nonce"),
        (
            "azp of another client",
            with("azp", json!("other")),
            "another client (azp)",
        ),
        (
            "several audiences, no azp",
            with("aud", json!([CLIENT, "other"])),
            "several audiences",
        ),
        ("issued in the future", with("iat", json!(now() + 3600)), "future"),
        ("no exp", without("exp"), "lacks the claim exp"),
        ("unsigned", unsigned, "not a signed JWT"),
        ("not a JWT", "garbage".into(), "not a signed JWT"),
    ];
    for (what, token, said) in cases {
        let why = refused(&keys, &token);
        assert!(why.contains(said), "{what}: {why}");
    }
}

#[test]
fn hmac_tokens_are_refused_even_with_a_symmetric_key_in_the_set() {
    // SECURITY: a token signed with HS256 (e.g. with the client secret, which a provider also knows) is never
    // accepted: HS* is not among the algorithms, and symmetric keys are skipped.
    let secret = b"console-secret";
    let oct = Jwk {
        common: CommonParameters {
            key_id: Some("k1".into()),
            ..CommonParameters::default()
        },
        algorithm: AlgorithmParameters::OctetKey(OctetKeyParameters {
            key_type: OctetKeyType::Octet,
            value: base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, secret),
        }),
    };
    let keys = JwkSet { keys: vec![oct] };
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("k1".into());
    let token = jsonwebtoken::encode(&header, &claims(), &EncodingKey::from_secret(secret)).unwrap();
    assert!(refused(&keys, &token).contains("not one of the provider's algorithms"));
    let verifier = Verifier {
        issuer: ISSUER,
        client_id: CLIENT,
        algorithms: &[Algorithm::HS256],
        keys: &keys,
    };
    assert!(verifier.verify(&token, NONCE).is_err(), "a symmetric key is never used");
}

#[test]
fn the_person_is_named_by_verified_email_else_sub_and_given_mapped_roles() {
    let map = RoleSource::Mapped([("cordon-approvers".to_string(), Roles::of([Role::Approver]))].into());
    let c = claims();
    let p = person(c.as_object().unwrap(), "groups", &map).unwrap();
    assert_eq!(
        (p.name.as_str(), p.subject.as_str()),
        ("person:anna@example.test", "anna")
    );
    assert_eq!(p.roles, Roles::of([Role::Approver]));
    assert!(
        !crate::principal::valid_name(&p.name),
        "no admin token can be named as a person is"
    );

    let mut c = claims();
    c["email_verified"] = json!(false);
    let p = person(c.as_object().unwrap(), "groups", &map).unwrap();
    assert_eq!(p.name, "person-sub:anna", "an unverified email is not a name");
    assert!(!crate::principal::valid_name(&p.name));
    // A sub that looks like someone's email is still apart from that person's name.
    let mut c = claims();
    c["email"] = Value::Null;
    c["sub"] = json!("bob@example.test");
    let p = person(c.as_object().unwrap(), "groups", &map).unwrap();
    assert_eq!(p.name, "person-sub:bob@example.test");

    let mut c = claims();
    c["groups"] = json!("cordon-approvers");
    assert!(
        person(c.as_object().unwrap(), "groups", &map).is_ok(),
        "a single string is one value"
    );

    let mut c = claims();
    c["groups"] = json!(["somewhere-else"]);
    assert!(matches!(
        person(c.as_object().unwrap(), "groups", &map),
        Err(SignInError::NoRole(..))
    ));

    let mut c = claims();
    c["roles"] = json!(["viewer", "superuser"]);
    let p = person(c.as_object().unwrap(), "roles", &RoleSource::Named).unwrap();
    assert_eq!(p.roles, Roles::of([Role::Viewer]), "unknown names give nothing");
    assert_eq!(p.claimed, ["viewer"], "only the values that give a role are kept");
}
