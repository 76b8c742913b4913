#![expect(clippy::unwrap_used, reason = "tests")]

use http::{HeaderMap, HeaderValue};

use super::*;

#[test]
fn headers_show_everything_but_credentials() {
    let mut h = HeaderMap::new();
    h.insert("content-type", HeaderValue::from_static("application/json"));
    h.insert("authorization", HeaderValue::from_static("Bearer sandbox-own-token"));
    h.insert("x-api-key", HeaderValue::from_static("abc"));
    h.insert("cookie", HeaderValue::from_static("s=1"));
    h.insert(
        "x-note",
        HeaderValue::from_static("uses cordon-ph-0123456789abcdef0123456789abcdef"),
    );
    let shown: Vec<(String, String)> = headers(&h).into_iter().map(|h| (h.name, h.value)).collect();
    let get = |n: &str| shown.iter().find(|(k, _)| k == n).unwrap().1.clone();
    assert_eq!(get("content-type"), "application/json");
    assert_eq!(get("authorization"), "[redacted: 24 bytes]");
    assert_eq!(get("x-api-key"), "[redacted: 3 bytes]");
    assert_eq!(get("cookie"), "[redacted: 3 bytes]");
    assert_eq!(get("x-note"), "uses cordon-ph-[redacted]");
}
