#![expect(clippy::unwrap_used, reason = "tests")]

use base64::Engine;

use super::*;

const PH: &str = "cordon-ph-0123456789abcdef0123456789abcdef";
const SECRET: &str = "sk-real-7c1f09aa34b2";

fn detector() -> Detector {
    Detector::new(&[("openai".to_string(), SecretString::from(SECRET))]).unwrap()
}

#[test]
fn a_placeholder_as_issued_is_plain() {
    let f = detector().scan(format!("Bearer {PH}").as_bytes());
    assert_eq!(f.plain, [PH]);
    assert!(f.disguised.is_empty() && f.secrets.is_empty());
    // Twice as issued, and nothing else: still plain (each occurrence counted).
    let f = detector().scan(format!("{PH},{PH}").as_bytes());
    assert_eq!(f.plain.len(), 2);
    assert!(f.disguised.is_empty());
}

#[test]
fn encoded_or_recased_placeholders_are_disguised() {
    let pct: String = PH.bytes().map(|b| format!("%{b:02x}")).collect();
    for text in [
        PH.to_uppercase(),
        PH.replace("cordon", "CoRdOn"),
        pct.clone(),
        pct.replace('%', "%25"),
        PH.replace('-', "\\u002d"),
        base64::engine::general_purpose::STANDARD.encode(PH),
        format!(
            "bAsIc\t{}",
            base64::engine::general_purpose::STANDARD.encode(format!("u:{PH}"))
        ),
        // One plain copy does not excuse an encoded second one.
        format!("{PH} and {pct}"),
    ] {
        let f = detector().scan(text.as_bytes());
        // Decoded, the whole placeholder shows; found in its base64 form, its prefix does.
        assert!(f.disguised == [PH] || f.disguised == ["cordon-ph-"], "{text}: {f:?}");
    }
}

#[test]
fn secrets_are_found_in_their_forms_and_split_fields() {
    let d = detector();
    for text in [
        SECRET.to_string(),
        SECRET.to_uppercase(),
        hex::encode(SECRET),
        base64::engine::general_purpose::URL_SAFE.encode(format!("x{SECRET}")),
        format!("a={}&b={}", &SECRET[..6], &SECRET[6..]),
        SECRET.bytes().map(|b| format!("%{b:02X}")).collect(),
    ] {
        assert_eq!(d.scan(text.as_bytes()).secrets, [["openai"]], "{text}");
    }
    assert!(d.scan(b"sk-real-but-not-it").is_empty());
}

#[test]
fn a_secret_two_credentials_share_may_go_where_either_may() {
    let d = Detector::new(&[
        ("a".to_string(), SecretString::from(SECRET)),
        ("b".to_string(), SecretString::from(SECRET)),
    ])
    .unwrap();
    let f = d.scan(SECRET.as_bytes());
    assert_eq!(f.secrets, [["a", "b"]]);
    assert_eq!(f.off_binding(&|c| c == "b"), None);
    assert_eq!(f.off_binding(&|_| false), Some("a"));
}

#[test]
fn a_split_prefix_is_still_a_placeholder() {
    let f = detector().scan(b"a=cordon-&b=ph-0123");
    assert!(!f.is_empty(), "{f:?}");
}
