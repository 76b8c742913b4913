#![expect(clippy::unwrap_used, reason = "tests")]
use super::*;
use http::HeaderValue;

#[test]
fn strips_hop_by_hop_and_nominated() {
    let mut h = HeaderMap::new();
    for (k, v) in [
        ("connection", "keep-alive, X-Secret-Hop, host"),
        ("x-secret-hop", "1"),
        ("proxy-authorization", "Basic abc"),
        ("proxy-connection", "keep-alive"),
        ("keep-alive", "timeout=5"),
        ("te", "gzip"),
        ("upgrade", "h2c"),
        ("x-cordon-sandbox", "admin"),
        ("X-Cordon-User", "root"),
        ("host", "example.com"),
        ("accept", "*/*"),
    ] {
        h.append(
            HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_static(v),
        );
    }
    strip_request(&mut h);
    let mut left: Vec<&str> = h.keys().map(|k| k.as_str()).collect();
    left.sort_unstable();
    assert_eq!(left, vec!["accept", "host"]);
}

#[test]
fn te_trailers_survives() {
    let mut h = HeaderMap::new();
    h.insert(header::TE, HeaderValue::from_static("trailers"));
    strip_request(&mut h);
    assert_eq!(h.get(header::TE).map(|v| v.as_bytes()), Some(&b"trailers"[..]));
}

#[test]
fn duplicate_host_is_refused() {
    let mut h = HeaderMap::new();
    assert_eq!(single_host(&h).unwrap(), None);
    h.append(header::HOST, HeaderValue::from_static("a.com"));
    assert_eq!(single_host(&h).unwrap().map(|v| v.as_bytes()), Some(&b"a.com"[..]));
    h.append(header::HOST, HeaderValue::from_static("b.com"));
    assert!(single_host(&h).is_err());
}

#[test]
fn response_loses_proxy_authenticate() {
    let mut h = HeaderMap::new();
    h.insert(header::PROXY_AUTHENTICATE, HeaderValue::from_static("Basic realm=x"));
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    strip_response(&mut h);
    assert!(h.get(header::PROXY_AUTHENTICATE).is_none());
    assert!(h.get(header::CONTENT_TYPE).is_some());
}
