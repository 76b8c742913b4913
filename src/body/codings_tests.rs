#![expect(clippy::unwrap_used, reason = "tests")]

use http::HeaderValue;

use super::*;

fn headers(fields: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in fields {
        h.append(
            http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    h
}

fn applied(fields: &[(&str, &str)]) -> Vec<&'static str> {
    Codings::of(&headers(fields)).unwrap().applied
}

#[test]
fn every_layout_of_stacked_content_codings_is_read_in_the_order_applied() {
    let two_lines = [("content-encoding", "gzip"), ("content-encoding", "gzip")];
    assert_eq!(applied(&two_lines), ["gzip", "gzip"]);
    assert_eq!(applied(&[("content-encoding", "gzip, gzip")]), ["gzip", "gzip"]);
    assert_eq!(applied(&[("content-encoding", "deflate,GZIP")]), ["deflate", "gzip"]);
    assert_eq!(
        applied(&[
            ("content-encoding", " identity , x-gzip ,, Br "),
            ("content-encoding", "zstd")
        ]),
        ["gzip", "br", "zstd"]
    );
    assert!(applied(&[("content-encoding", "identity")]).is_empty());
    assert!(applied(&[]).is_empty());
}

#[test]
fn transfer_codings_before_chunked_come_after_the_content_codings() {
    assert_eq!(applied(&[("transfer-encoding", "gzip, chunked")]), ["gzip"]);
    assert_eq!(
        applied(&[
            ("content-encoding", "br"),
            ("transfer-encoding", "deflate"),
            ("transfer-encoding", "chunked")
        ]),
        ["br", "deflate"]
    );
    // Close-delimited: no chunked at all.
    assert_eq!(applied(&[("transfer-encoding", "gzip")]), ["gzip"]);
    assert!(applied(&[("transfer-encoding", "chunked")]).is_empty());
    for bad in ["chunked, gzip", "chunked, chunked"] {
        let err = Codings::of(&headers(&[("transfer-encoding", bad)])).unwrap_err();
        assert!(err.to_string().contains("after chunked"), "{bad}: {err}");
    }
}

#[test]
fn a_body_compressed_by_its_media_type_is_undone_first_and_compressed_again() {
    for (ty, coding) in [
        ("application/gzip", "gzip"),
        ("Application/X-GZIP; name=a.gz", "gzip"),
        ("application/zlib", "deflate"),
        ("application/zstd", "zstd"),
    ] {
        let c = Codings::of(&headers(&[("content-type", ty), ("content-encoding", "br")])).unwrap();
        assert_eq!(c.applied, [coding, "br"], "{ty}");
        assert_eq!(c.media, Some(coding), "{ty}");
    }
    let plain = Codings::of(&headers(&[("content-type", "application/json")])).unwrap();
    assert!(plain.is_empty() && plain.media.is_none());
}

#[test]
fn unknown_codings_and_deep_stacks_are_errors_naming_the_header() {
    let err = Codings::of(&headers(&[("content-encoding", "gzip, compress")])).unwrap_err();
    assert!(err.to_string().contains("compress (in Content-Encoding)"), "{err}");
    let err = Codings::of(&headers(&[("transfer-encoding", "exi, chunked")])).unwrap_err();
    assert!(err.to_string().contains("exi (in Transfer-Encoding)"), "{err}");
    let deep = "gzip, ".repeat(MAX_STACK) + "gzip";
    let err = Codings::of(&headers(&[("content-encoding", &deep)])).unwrap_err();
    assert!(err.to_string().contains("at most 4"), "{err}");
    let mut h = HeaderMap::new();
    h.insert("content-encoding", HeaderValue::from_bytes(b"gz\xffip").unwrap());
    assert!(Codings::of(&h).unwrap_err().to_string().contains("not text"));
}
