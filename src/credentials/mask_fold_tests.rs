#![expect(clippy::unwrap_used, reason = "tests")]

use secrecy::SecretString;

use super::*;

const SECRET: &str = "Tk_Live.9f8E7d6C";

#[test]
fn a_form_is_found_whatever_the_case_of_its_letters() {
    let m = Masker::new(&[(SecretString::from(SECRET), "cordon-ph-x".to_string())]).unwrap();
    let lower = SECRET.to_ascii_lowercase();
    for holds in [
        SECRET.to_string(),
        lower.clone(),
        format!("x-{lower}-echo"),
        SECRET.to_ascii_uppercase(),
        hex::encode(SECRET),
        hex::encode_upper(SECRET).to_ascii_lowercase(),
    ] {
        assert!(m.holds_folded(holds.as_bytes()), "{holds}");
    }
    for clean in ["x-request-id", "tk_live.9f8e7d6", "content-type", ""] {
        assert!(!m.holds_folded(clean.as_bytes()), "{clean}");
    }
    // Masking ignores ASCII case too, so a value and a name are judged alike.
    assert!(m.mask(lower.as_bytes()).is_some());
}
