#![expect(clippy::unwrap_used, reason = "tests")]

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};

use super::*;

const SECRET: &[u8] = b"sk-live/51Hx+Qz?a=b&c\"d";

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn every_base64_alignment_of_the_secret_in_any_surroundings_contains_a_form() {
    let forms = forms(SECRET);
    for engine in [&STANDARD, &URL_SAFE] {
        for before in ["", "x", "xy", "xyz", "{\"k\":1}"] {
            for after in ["", "!", "!!", "tail"] {
                let text = [before.as_bytes(), SECRET, after.as_bytes()].concat();
                let encoded = engine.encode(&text);
                assert!(
                    forms.iter().any(|f| contains(encoded.as_bytes(), f)),
                    "{before:?}+secret+{after:?} as {encoded}"
                );
            }
        }
    }
}

#[test]
fn percent_json_and_hex_forms_are_what_encoders_write() {
    let forms = forms(SECRET);
    let has = |s: &str| forms.iter().any(|f| f == s.as_bytes());
    assert!(has("sk-live%2F51Hx%2BQz%3Fa%3Db%26c%22d"));
    assert!(has("sk-live%2f51Hx%2bQz%3fa%3db%26c%22d"));
    assert!(has(r#"sk-live/51Hx+Qz?a=b&c\"d"#));
    assert!(has(r#"sk-live\/51Hx+Qz?a=b&c\"d"#));
    assert!(has(r#"sk-live/51Hx+Qz?a=b\u0026c\"d"#));
    assert!(has(&hex::encode(SECRET)));
    assert!(has(&hex::encode_upper(SECRET)));
    assert!(has(std::str::from_utf8(SECRET).unwrap()));
}

#[test]
fn forms_are_unique_longest_first_and_never_too_short() {
    let forms = forms(b"abcdefghijklmnop");
    let mut sorted = forms.clone();
    sorted.dedup();
    assert_eq!(sorted.len(), forms.len());
    assert!(forms.windows(2).all(|w| w[0].len() >= w[1].len()));
    assert!(forms.iter().all(|f| f.len() >= MIN_FORM));
    // A secret too short to tell from ordinary text has no form at all.
    assert!(super::forms(b"abc").is_empty());
}
