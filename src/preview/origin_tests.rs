#![expect(clippy::unwrap_used, reason = "tests")]

use http::{HeaderMap, HeaderValue, Method};

use super::*;

const HOST: &str = "3000-sb1.preview.example.com:8443";

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (name, value) in pairs {
        h.append(
            *name,
            HeaderValue::from_str(value).unwrap_or(HeaderValue::from_static("x")),
        );
    }
    h
}

fn ok(method: Method, pairs: &[(&'static str, &str)]) -> bool {
    check(&method, &headers(pairs), "https", HOST).is_ok()
}

#[test]
fn the_previews_own_origin_passes_in_any_spelling_a_browser_may_send() {
    for origin in [
        "https://3000-sb1.preview.example.com:8443",
        "HTTPS://3000-SB1.Preview.Example.Com:8443",
    ] {
        for method in [Method::GET, Method::POST, Method::DELETE] {
            assert!(ok(method, &[("origin", origin)]), "{origin}");
        }
        assert!(
            ok(Method::GET, &[("origin", origin), ("upgrade", "websocket")]),
            "{origin}"
        );
    }
    // The scheme's default port, written or not.
    let h = headers(&[("origin", "https://3000-sb1.preview.example.com")]);
    assert!(check(&Method::POST, &h, "https", "3000-sb1.preview.example.com:443").is_ok());
    let h = headers(&[("origin", "https://3000-sb1.preview.example.com:443")]);
    assert!(check(&Method::POST, &h, "https", "3000-sb1.preview.example.com").is_ok());
}

#[test]
fn any_other_origin_is_refused_whatever_the_method() {
    for origin in [
        "https://3000-sb2.preview.example.com:8443",
        "https://8888-sb1.preview.example.com:8443",
        "https://preview.example.com:8443",
        "https://example.com",
        "http://3000-sb1.preview.example.com:8443",
        "https://3000-sb1.preview.example.com",
        "https://3000-sb1.preview.example.com:9443",
        "https://3000-sb1.preview.example.com.:8443",
        "https://x.3000-sb1.preview.example.com:8443",
        "null",
        "",
        "https://3000-sb1.preview.example.com:8443/",
        "https://user@3000-sb1.preview.example.com:8443",
        "https://3000-sb1.preview.example.com:",
        "3000-sb1.preview.example.com:8443",
        "chrome-extension://abc",
    ] {
        for method in [Method::GET, Method::OPTIONS, Method::POST, Method::PUT] {
            assert!(!ok(method.clone(), &[("origin", origin)]), "{method} {origin:?}");
        }
        assert!(
            !ok(Method::GET, &[("origin", origin), ("upgrade", "websocket")]),
            "{origin:?}"
        );
    }
}

#[test]
fn two_origins_are_refused_even_if_one_is_the_previews() {
    let own = "https://3000-sb1.preview.example.com:8443";
    assert!(!ok(Method::POST, &[("origin", own), ("origin", own)]));
}

#[test]
fn without_origin_sec_fetch_site_decides_for_upgrades_and_state_changes() {
    for site in ["same-site", "cross-site", "Cross-Site", "bogus"] {
        assert!(!ok(Method::POST, &[("sec-fetch-site", site)]), "{site}");
        assert!(!ok(Method::PATCH, &[("sec-fetch-site", site)]), "{site}");
        assert!(
            !ok(Method::GET, &[("sec-fetch-site", site), ("upgrade", "websocket")]),
            "{site}"
        );
        // A navigation or an image from another preview reads nothing and changes nothing.
        assert!(ok(Method::GET, &[("sec-fetch-site", site)]), "{site}");
    }
    for site in ["same-origin", "none"] {
        assert!(ok(Method::POST, &[("sec-fetch-site", site)]), "{site}");
        assert!(
            ok(Method::GET, &[("sec-fetch-site", site), ("upgrade", "websocket")]),
            "{site}"
        );
    }
    // Not a browser (curl, a script): nothing to check, the session cookie is its own.
    assert!(ok(Method::POST, &[]));
    assert!(ok(Method::GET, &[("upgrade", "websocket")]));
}

#[test]
fn the_message_names_both_origins() {
    let h = headers(&[("origin", "https://3000-sb2.preview.example.com:8443")]);
    let e = check(&Method::POST, &h, "https", HOST).unwrap_err();
    assert!(
        e.contains("https://3000-sb2.preview.example.com:8443")
            && e.contains("https://3000-sb1.preview.example.com:8443"),
        "{e}"
    );
}
