#![expect(clippy::unwrap_used, reason = "tests")]

use http::HeaderValue;
use secrecy::SecretString;

use super::*;

const SECRET: &str = "Tk_Live.9f8E7d6C";
const PH: &str = "cordon-ph-00112233";

fn masker() -> Masker {
    Masker::new(&[(SecretString::from(SECRET), PH.to_string())]).unwrap()
}

fn parts() -> Parts {
    http::Response::new(()).into_parts().0
}

#[test]
fn the_reason_phrase_is_masked_and_a_plain_one_kept() {
    let m = masker();
    let mut p = parts();
    p.extensions
        .insert(ReasonPhrase::try_from(format!("Denied {SECRET}")).unwrap());
    mask_head(&m, &mut p);
    assert_eq!(
        p.extensions.get::<ReasonPhrase>().unwrap().as_bytes(),
        format!("Denied {PH}").as_bytes()
    );
    let mut p = parts();
    p.extensions.insert(ReasonPhrase::from_static(b"Fine Thanks"));
    mask_head(&m, &mut p);
    assert_eq!(p.extensions.get::<ReasonPhrase>().unwrap().as_bytes(), b"Fine Thanks");
}

#[test]
fn fields_named_by_a_secret_are_dropped_and_values_masked() {
    let m = masker();
    let mut h = HeaderMap::new();
    h.insert(
        HeaderName::from_bytes(format!("x-{SECRET}").as_bytes()).unwrap(),
        HeaderValue::from_static("1"),
    );
    h.insert(
        HeaderName::from_bytes(hex::encode(SECRET).as_bytes()).unwrap(),
        HeaderValue::from_static("1"),
    );
    h.insert("x-echo", HeaderValue::from_str(&format!("v={SECRET}")).unwrap());
    h.insert("content-type", HeaderValue::from_static("text/plain"));
    mask_fields(&m, &mut h);
    let mut names: Vec<&str> = h.keys().map(HeaderName::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["content-type", "x-echo"]);
    assert_eq!(h["x-echo"], format!("v={PH}").as_str());
}

#[test]
fn a_name_holds_a_form_whatever_the_case_of_its_letters() {
    let m = masker();
    let lower = SECRET.to_ascii_lowercase();
    for holds in [
        SECRET.to_string(),
        lower.clone(),
        format!("x-{lower}-echo"),
        SECRET.to_ascii_uppercase(),
        hex::encode(SECRET),
        hex::encode_upper(SECRET).to_ascii_lowercase(),
    ] {
        assert!(m.holds(holds.as_bytes()), "{holds}");
    }
    for clean in ["x-request-id", "tk_live.9f8e7d6", "content-type", ""] {
        assert!(!m.holds(clean.as_bytes()), "{clean}");
    }
    // Masking ignores ASCII case too, so a value and a name are judged alike.
    assert!(m.mask(lower.as_bytes()).is_some());
}
