#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

fn parts(uri: &str, headers: &[(&str, &str)]) -> Parts {
    let mut b = http::Request::get(uri);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(()).unwrap().into_parts().0
}

const AUTH: &str = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, \
                    SignedHeaders=content-type;host;x-amz-date, \
                    Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7";

#[test]
fn a_header_signature_is_read_whole() {
    let p = parts(
        "/?Action=ListUsers&Version=2010-05-08",
        &[("authorization", AUTH), ("x-amz-date", "20150830T123600Z")],
    );
    let s = read(&p).unwrap().unwrap();
    assert_eq!(s.location, Location::Header);
    assert_eq!(
        (s.key_id.as_str(), s.region.as_str(), s.service.as_str()),
        ("AKIDEXAMPLE", "us-east-1", "iam")
    );
    assert_eq!(s.signed_headers, ["content-type", "host", "x-amz-date"]);
    assert_eq!(s.payload, None);
    assert_eq!(s.time, SystemTime::UNIX_EPOCH + Duration::from_secs(1_440_938_160));
}

#[test]
fn no_signature_is_none_and_other_forms_say_what_to_change() {
    assert!(read(&parts("/", &[])).unwrap().is_none());
    let v2 = read(&parts("/", &[("authorization", "AWS AKID:c2lnbmF0dXJl")])).unwrap_err();
    assert!(
        matches!(&v2, Unfit::Unsupported(m) if m.contains("Version 2")),
        "{v2:?}"
    );
    let v2q = read(&parts("/b/k?AWSAccessKeyId=AKID&Expires=1&Signature=x", &[])).unwrap_err();
    assert!(matches!(v2q, Unfit::Unsupported(_)));
    let v4a = read(&parts("/", &[("authorization", "AWS4-ECDSA-P256-SHA256 Credential=x")])).unwrap_err();
    assert!(matches!(v4a, Unfit::Unsupported(_)));
    let chunked = read(&parts(
        "/",
        &[
            (
                "authorization",
                AUTH.replace("content-type;host;x-amz-date", "host;x-amz-content-sha256;x-amz-date")
                    .as_str(),
            ),
            ("x-amz-date", "20150830T123600Z"),
            ("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"),
        ],
    ))
    .unwrap_err();
    assert!(
        matches!(&chunked, Unfit::Unsupported(m) if m.contains("chunk by chunk")),
        "{chunked:?}"
    );
}

#[test]
fn malformed_signatures_are_refused() {
    let date = ("x-amz-date", "20150830T123600Z");
    for auth in [
        "AWS4-HMAC-SHA256 Credential=AKID/20150830/us-east-1/iam, SignedHeaders=host, Signature=00",
        "AWS4-HMAC-SHA256 SignedHeaders=host;x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
        "AWS4-HMAC-SHA256 Credential=AKID/20150831/us-east-1/iam/aws4_request, SignedHeaders=host;x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
        "AWS4-HMAC-SHA256 Credential=AKID/20150830/us-east-1/iam/aws4_request, SignedHeaders=x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
        "AWS4-HMAC-SHA256 Credential=AKID/20150830/us-east-1/iam/aws4_request, SignedHeaders=Host;x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
        "Bearer abc",
    ] {
        let r = read(&parts("/", &[("authorization", auth), date]));
        assert!(matches!(r, Err(Unfit::Malformed(_))), "{auth}: {r:?}");
    }
    let no_date = read(&parts("/", &[("authorization", AUTH)]));
    assert!(matches!(no_date, Err(Unfit::Malformed(_))));
    let both = read(&parts(
        "/?X-Amz-Algorithm=AWS4-HMAC-SHA256",
        &[("authorization", AUTH), date],
    ));
    assert!(matches!(both, Err(Unfit::Malformed(_))));
}

#[test]
fn a_presigned_url_is_read_from_its_query() {
    let p = parts(
        "/bucket/key?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2F20150830%2Fus-east-1%2Fs3%2Faws4_request\
         &X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\
         &X-Amz-Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
        &[],
    );
    let s = read(&p).unwrap().unwrap();
    assert_eq!(s.location, Location::Query { expires: 3600 });
    assert_eq!((s.key_id.as_str(), s.service.as_str()), ("AKID", "s3"));
    let too_long = parts("/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=999999999", &[]);
    assert!(matches!(read(&too_long), Err(Unfit::Malformed(_))));
}

#[test]
fn amz_dates_are_read_strictly() {
    assert!(amz_date("20150830T123600Z").is_some());
    for bad in [
        "20150830T123600",
        "2015-08-30T12:36:00Z",
        "20151330T123600Z",
        "20150830T256000Z",
        "+0150830T123600Z",
    ] {
        assert!(amz_date(bad).is_none(), "{bad}");
    }
}
