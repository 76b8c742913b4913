use http::header::{COOKIE, SET_COOKIE};
use http::{HeaderMap, HeaderValue};

use super::*;

const OWN: &str = "3000-sb1.preview.example.com";

fn set_cookies(lines: &[&str]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for line in lines {
        h.append(
            SET_COOKIE,
            HeaderValue::from_str(line).unwrap_or(HeaderValue::from_static("x")),
        );
    }
    h
}

fn kept(h: &HeaderMap) -> Vec<String> {
    h.get_all(SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn cordon_s_cookie_in_any_spelling_is_never_set_by_a_dev_server() {
    for line in [
        "cordon_preview=x",
        "__Host-cordon_preview=x; Secure; Path=/",
        "__host-cordon_preview=x; Secure; Path=/",
        "__Secure-cordon_preview=x; Secure",
        "CORDON_PREVIEW=x",
        " cordon_preview =x",
        "=cordon_preview=x",
        "cordon_preview",
        "cordon_preview=x; Domain=preview.example.com; Path=/",
    ] {
        let mut h = set_cookies(&[line]);
        let stripped = strip_response(&mut h, OWN);
        assert_eq!(stripped.len(), 1, "{line}");
        assert!(kept(&h).is_empty(), "{line}");
    }
}

#[test]
fn a_domain_other_than_the_previews_host_is_stripped_host_only_cookies_stay() {
    let mut h = set_cookies(&[
        "app=1; Path=/; HttpOnly",
        "sid=2; Domain=preview.example.com; Path=/",
        "sid=3; domain=.PREVIEW.example.com",
        "sid=4; Path=/; DOMAIN = example.com",
        "sid=5; Domain=3000-sb2.preview.example.com",
        "sid=6; Domain=3000-sb1.preview.example.com; Domain=preview.example.com",
        "sid=7; Domain=preview.example.com.",
        "own=8; Domain=3000-sb1.Preview.example.com",
        "own=9; Domain=.3000-sb1.preview.example.com; Secure",
        "theme=dark",
    ]);
    let stripped = strip_response(&mut h, OWN);
    assert_eq!(stripped, ["sid"; 6]);
    assert_eq!(
        kept(&h),
        [
            "app=1; Path=/; HttpOnly",
            "own=8; Domain=3000-sb1.Preview.example.com",
            "own=9; Domain=.3000-sb1.preview.example.com; Secure",
            "theme=dark"
        ]
    );
}

#[test]
fn a_line_that_is_not_utf8_is_judged_too() {
    let mut h = HeaderMap::new();
    h.append(
        SET_COOKIE,
        HeaderValue::from_bytes(b"s=\xff; Domain=example.com").unwrap_or(HeaderValue::from_static("x")),
    );
    h.append(
        SET_COOKIE,
        HeaderValue::from_bytes(b"t=\xff").unwrap_or(HeaderValue::from_static("x")),
    );
    assert_eq!(strip_response(&mut h, OWN), ["s"]);
    assert_eq!(h.get_all(SET_COOKIE).iter().count(), 1);
}

#[test]
fn only_the_host_prefixed_name_is_a_session_and_every_spelling_is_kept_from_the_dev_server() {
    let mut h = HeaderMap::new();
    h.append(
        COOKIE,
        HeaderValue::from_static("a=1; cordon_preview=old; __Host-cordon_preview=s1"),
    );
    h.append(
        COOKIE,
        HeaderValue::from_static("__host-cordon_preview=x; b=2; __Host-cordon_preview = s2 "),
    );
    assert_eq!(sessions(&h), ["s1", "s2"]);
    strip_request(&mut h);
    assert_eq!(h.get_all(COOKIE).iter().collect::<Vec<_>>(), ["a=1; b=2"]);
    let mut only = HeaderMap::new();
    only.append(COOKIE, HeaderValue::from_static("__Host-cordon_preview=s"));
    strip_request(&mut only);
    assert!(only.get(COOKIE).is_none());
}
