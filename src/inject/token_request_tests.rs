#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

fn request(uri: &str, headers: &[(&str, &str)]) -> Parts {
    let mut b = http::Request::builder().method("POST").uri(uri);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(()).unwrap().into_parts().0
}

const FORM: (&str, &str) = ("content-type", "application/x-www-form-urlencoded");
const JSON: (&str, &str) = ("content-type", "application/json");

fn read(uri: &str, headers: &[(&str, &str)], body: &[u8]) -> Result<Vec<String>, String> {
    grants(
        &request(uri, headers),
        Some(&Readings::of(bytes::Bytes::copy_from_slice(body))),
    )
}

#[test]
fn a_grant_written_the_one_way_is_read() {
    let cc = vec!["client_credentials".to_string()];
    for (uri, headers, body) in [
        ("/token", vec![FORM], &b"grant_type=client_credentials&scope=a"[..]),
        (
            "/token",
            vec![("content-type", "application/x-www-form-urlencoded; charset=UTF-8")],
            b"scope=a&grant_type=client%5Fcredentials",
        ),
        (
            "/token",
            vec![JSON],
            br#"{"grant_type": "client_credentials", "scope": "a"}"#,
        ),
        (
            "/token",
            vec![("content-type", "application/vnd.x+json;charset=\"utf-8\"")],
            br#"{"grant\u005ftype": "client_credentials"}"#,
        ),
        ("/token?grant_type=client_credentials", vec![FORM], b""),
        // No type, or another: read as a form and, when it parses, as JSON (as lenient servers read it).
        ("/token", vec![], b"grant_type=client_credentials"),
        (
            "/token",
            vec![("content-type", "text/plain")],
            b"scope=a&grant_type=client_credentials",
        ),
        (
            "/token",
            vec![("content-type", "application/octet-stream")],
            br#"{"grant_type": "client_credentials"}"#,
        ),
    ] {
        assert_eq!(
            read(uri, &headers, body),
            Ok(cc.clone()),
            "{uri} {}",
            String::from_utf8_lossy(body)
        );
    }
    let exchange = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange";
    assert_eq!(
        read("/t", &[FORM], exchange.as_bytes()).unwrap(),
        ["urn:ietf:params:oauth:grant-type:token-exchange"]
    );
}

#[test]
fn what_only_mentions_a_grant_mints_nothing() {
    for (headers, body) in [
        (
            vec![JSON],
            &br#"{"messages": [{"content": "what is a grant_type?"}]}"#[..],
        ),
        (vec![FORM], b"note=grant_type+is+a+parameter&x=1"),
        (vec![("content-type", "text/plain")], b"nothing about tokens here"),
        (
            vec![("content-type", "text/plain")],
            b"The grant type; see RFC 6749 (grant_type: the kind of grant).",
        ),
        (vec![], b"# notes\nuse grant-type client credentials; then call"),
        (vec![FORM], b"note=grant_type;more&x=1"),
        (
            vec![JSON],
            br#"{"grant_types": ["client_credentials"], "client_name": "x"}"#,
        ),
        (vec![], b""),
    ] {
        assert_eq!(
            read("/v1/chat", &headers, body),
            Ok(vec![]),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
    // A query with a `;` that names no grant is not read strictly.
    assert_eq!(read("/x?a=1;b=2", &[FORM], b"x=1"), Ok(vec![]));
}

/// A request (its URI, headers and body) and what the refusal must say.
type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, Vec<u8>, &'a str);

#[test]
fn every_way_servers_read_apart_is_refused() {
    let cc = "client_credentials";
    let bom = [&[0xEF, 0xBB, 0xBF][..], br#"{"grant_type": "client_credentials"}"#].concat();
    let form_bom = [&[0xEF, 0xBB, 0xBF][..], b"grant_type=client_credentials"].concat();
    let overlong = [&b"grant"[..], &[0xC1, 0x9F], b"type=client_credentials"].concat();
    let latin1 = [&b"grant_type=client_credentials&x="[..], &[0xE9]].concat();
    let cases: Vec<Case> = vec![
        ("/t", vec![FORM], format!("a=1;grant_type={cc}").into_bytes(), "';'"),
        ("/t?a=1;grant_type=password", vec![], Vec::new(), "';'"),
        ("/t", vec![JSON], bom, "byte order mark"),
        ("/t", vec![FORM], form_bom, "byte order mark"),
        (
            "/t",
            vec![FORM],
            format!("grant_type={cc}&grant_type=password").into_bytes(),
            "2 times",
        ),
        (
            "/t?grant_type=password",
            vec![FORM],
            format!("grant_type={cc}").into_bytes(),
            "2 times",
        ),
        (
            "/t",
            vec![FORM],
            format!("grant%5Ftype={cc}").into_bytes(),
            "grant%5Ftype",
        ),
        (
            "/t",
            vec![FORM],
            format!("%67rant_type={cc}").into_bytes(),
            "%67rant_type",
        ),
        (
            "/t",
            vec![FORM],
            format!("grant%255Ftype={cc}").into_bytes(),
            "grant%255Ftype",
        ),
        ("/t", vec![FORM], format!("GRANT_TYPE={cc}").into_bytes(), "GRANT_TYPE"),
        ("/t", vec![FORM], format!("Grant-Type={cc}").into_bytes(), "Grant-Type"),
        ("/t", vec![FORM], format!("grant+type={cc}").into_bytes(), "grant+type"),
        (
            "/t",
            vec![FORM],
            format!("grant_type[]={cc}").into_bytes(),
            "grant_type[]",
        ),
        ("/t", vec![FORM], format!("grantType={cc}").into_bytes(), "grantType"),
        ("/t", vec![FORM], b"grant_type=client+credentials".to_vec(), "'+'"),
        ("/t", vec![FORM], b"grant_type=client%20credentials".to_vec(), "spaces"),
        ("/t", vec![FORM], format!("grant_type={cc}\0").into_bytes(), "NUL"),
        (
            "/t",
            vec![FORM],
            format!("grant_type\0=x&grant_type={cc}").into_bytes(),
            "NUL",
        ),
        ("/t", vec![FORM], overlong, "not UTF-8"),
        ("/t", vec![FORM], latin1, "not UTF-8"),
        ("/t", vec![JSON], format!("grant_type={cc}").into_bytes(), "JSON body"),
        (
            "/t",
            vec![FORM],
            format!(r#"{{"grant_type": "{cc}"}}"#).into_bytes(),
            "the form is JSON",
        ),
        ("/t", vec![], format!("a=1;grant_type={cc}").into_bytes(), "';'"),
        (
            "/t",
            vec![("content-type", "text/plain")],
            format!("grant_type={cc};x=1").into_bytes(),
            "';'",
        ),
        (
            "/t",
            vec![("content-type", "text/plain")],
            br#"{"grant_type": "password", "x": "&grant_type=client_credentials"}"#.to_vec(),
            "2 times",
        ),
        (
            "/t",
            vec![("content-type", "application/octet-stream")],
            format!("GRANT_TYPE={cc}").into_bytes(),
            "GRANT_TYPE",
        ),
        (
            "/t",
            vec![],
            format!(r#"{{"x": {{"grant_type": "{cc}"}}}}"#).into_bytes(),
            "below its top level",
        ),
        (
            "/t",
            vec![("content-type", "multipart/form-data; boundary=b")],
            format!("--b\r\nContent-Disposition: form-data; name=\"grant_type\"\r\n\r\n{cc}\r\n--b--\r\n").into_bytes(),
            "multipart",
        ),
        (
            "/t",
            vec![("content-type", "application/x-www-form-urlencoded; charset=iso-8859-1")],
            format!("grant_type={cc}").into_bytes(),
            "charset",
        ),
        (
            "/t",
            vec![FORM, ("content-type", "application/json")],
            format!("grant_type={cc}").into_bytes(),
            "two Content-Type",
        ),
        (
            "/t",
            vec![FORM, ("content-encoding", "gzip")],
            format!("grant_type={cc}").into_bytes(),
            "Content-Encoding",
        ),
        (
            "/t",
            vec![JSON],
            format!(r#"{{"grant_type": ["{cc}"]}}"#).into_bytes(),
            "an array",
        ),
        (
            "/t",
            vec![JSON],
            format!(r#"{{"grant_type": {{"v": "{cc}"}}}}"#).into_bytes(),
            "an object",
        ),
        (
            "/t",
            vec![JSON],
            format!(r#"{{"data": {{"grant_type": "{cc}"}}}}"#).into_bytes(),
            "below its top level",
        ),
        (
            "/t",
            vec![JSON],
            format!(r#"[{{"grant_type": "{cc}"}}]"#).into_bytes(),
            "below its top level",
        ),
        (
            "/t",
            vec![JSON],
            format!(r#"{{"grant_type": "x", "grant_type": "{cc}"}}"#).into_bytes(),
            "twice",
        ),
        (
            "/t",
            vec![JSON],
            format!(r#"{{"Grant_Type": "{cc}"}}"#).into_bytes(),
            "Grant_Type",
        ),
        (
            "/t",
            vec![JSON],
            format!(r#"{{"grant_type": " {cc}"}}"#).into_bytes(),
            "spaces",
        ),
    ];
    for (uri, headers, body, says) in cases {
        let got = read(uri, &headers, &body);
        let err = got.clone().err().unwrap_or_default();
        assert!(
            err.contains(says),
            "{uri} {headers:?} {:?}: {got:?}",
            String::from_utf8_lossy(&body)
        );
    }
}
