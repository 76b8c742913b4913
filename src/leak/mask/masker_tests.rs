#![expect(clippy::unwrap_used, reason = "tests")]

use base64::Engine;

use super::*;

const SECRET: &str = "sk-live-4f9a1c7e2b8d6a03";
const PLACEHOLDER: &str = "cordon-ph-00112233445566778899aabbccddeeff";

fn masker() -> Arc<Masker> {
    Arc::new(Masker::new(&[(SecretString::from(SECRET), PLACEHOLDER.to_string())]).unwrap())
}

/// Feed `text` to a stream in pieces of `size` bytes and collect everything it lets out.
fn streamed(masker: &Arc<Masker>, text: &[u8], size: usize) -> Vec<u8> {
    let mut stream = masker.stream();
    let mut out = Vec::new();
    for piece in text.chunks(size) {
        out.extend_from_slice(&stream.push(Bytes::copy_from_slice(piece)));
    }
    out.extend_from_slice(&stream.finish());
    out
}

#[test]
fn the_secret_and_its_encodings_are_masked_in_one_pass() {
    let m = masker();
    let b64 = base64::engine::general_purpose::STANDARD.encode(format!("user:{SECRET}"));
    let text = format!(
        "a {SECRET} b {} c {} d {b64} e",
        hex::encode(SECRET),
        SECRET.replace('-', "\\u002d")
    );
    let masked = String::from_utf8(m.mask(text.as_bytes()).unwrap()).unwrap();
    assert!(!masked.contains(SECRET), "{masked}");
    assert!(!masked.contains(&hex::encode(SECRET)), "{masked}");
    // The `\u002d` spelling (no JSON encoder's, but any JSON decoder's) is read as JSON.
    assert_eq!(masked.matches(PLACEHOLDER).count(), 4, "{masked}");
    assert!(!masked.contains("\\u002d"), "{masked}");
    assert!(m.mask(b"nothing here").is_none());
}

#[test]
fn a_secret_split_anywhere_across_chunks_never_gets_out() {
    let m = masker();
    let text = format!("event: x\ndata: {{\"k\": \"{SECRET}\"}}\n\n{SECRET}{SECRET} tail {SECRET}");
    let whole = m.mask(text.as_bytes()).unwrap();
    for size in 1..=text.len() {
        let out = streamed(&m, text.as_bytes(), size);
        assert_eq!(out, whole, "chunks of {size}");
    }
}

#[test]
fn only_what_could_begin_a_secret_is_held_back() {
    let m = masker();
    let mut stream = m.stream();
    // An SSE event ends with a blank line, which starts no secret: all of it goes out now.
    let event = b"data: hello\n\n";
    assert_eq!(&stream.push(Bytes::from_static(event))[..], event);
    // A chunk ending in the first bytes of the secret holds exactly those back.
    let out = stream.push(Bytes::from(format!("data: {}", &SECRET[..7])));
    assert_eq!(&out[..], b"data: ");
    let out = stream.push(Bytes::from(format!("{}\n\n", &SECRET[7..])));
    assert_eq!(out, Bytes::from(format!("{PLACEHOLDER}\n\n")));
    // A held prefix that turns out not to be a secret goes out with what follows it.
    let out = stream.push(Bytes::from_static(b"sk-li"));
    assert!(out.is_empty());
    let out = stream.push(Bytes::from_static(b"ne!\n"));
    assert_eq!(&out[..], b"sk-line!\n");
    assert!(stream.finish().is_empty());
}

#[test]
fn several_secrets_each_get_their_own_placeholder_and_headers_are_masked() {
    let m = Masker::new(&[
        (SecretString::from("first-secret-value-1"), "PH1".to_string()),
        (SecretString::from("second-secret-value-2"), "PH2".to_string()),
    ])
    .unwrap();
    let masked = m.mask(b"first-secret-value-1/second-secret-value-2").unwrap();
    assert_eq!(masked, b"PH1/PH2");
    let mut headers = HeaderMap::new();
    headers.insert("x-echo", HeaderValue::from_static("Bearer first-secret-value-1"));
    headers.insert(
        "x-raw",
        HeaderValue::from_bytes(b"\xffsecond-secret-value-2\xfe").unwrap(),
    );
    headers.insert("x-plain", HeaderValue::from_static("nothing"));
    m.mask_headers(&mut headers);
    assert_eq!(headers["x-echo"], "Bearer PH1");
    assert_eq!(headers["x-raw"].as_bytes(), b"\xffPH2\xfe");
    assert_eq!(headers["x-plain"], "nothing");
}

#[test]
fn nothing_to_mask_builds_no_masker() {
    assert!(Masker::new(&[]).is_none());
    assert!(Masker::new(&[(SecretString::from(""), "PH".to_string())]).is_none());
    // Too short to tell from ordinary text: never masked (it would mangle every answer).
    assert!(Masker::new(&[(SecretString::from("x"), "PH".to_string())]).is_none());
}

#[test]
fn a_cut_escape_is_held_back_until_it_is_complete() {
    let m = masker();
    let mut stream = m.stream();
    // A line ending in a character of encoded text may be wrapped base64; when nothing in it could begin a
    // secret, it goes (`!` begins no form).
    assert_eq!(&stream.push(Bytes::from_static(b"data: 42!\n"))[..], b"data: 42!\n");
    // An escape cut by the chunk's end waits (and the `=` before it, which with the escape decoded may begin
    // a `=XX`: escapes are read two deep); completed, it is the start of a percent-encoded secret.
    assert_eq!(&stream.push(Bytes::from_static(b"x=%7"))[..], b"x");
    let rest = format!("3k{}", &SECRET[2..]).replace('-', "%2d");
    // (A secret that ends the chunk waits for the next one: a longer form could continue it.)
    let out = [stream.push(Bytes::from(rest)), stream.finish()].concat();
    assert_eq!(out, [b"=", PLACEHOLDER.as_bytes()].concat());
}

#[test]
fn json_escapes_are_masked_whole_and_the_document_stays_json() {
    let m = masker();
    let upper: String = SECRET.bytes().map(|b| format!("\\u{b:04X}")).collect();
    let some = SECRET
        .replacen('s', "\\u0073", 1)
        .replace('-', "\\u002D")
        .replace('4', "\\u0034");
    for escaped in [SECRET.replace('-', "\\u002d"), upper, some] {
        let doc = format!("{{\"a\": \"x {escaped} y\", \"b\": [\"{escaped}\"]}}");
        let want = format!("{{\"a\": \"x {PLACEHOLDER} y\", \"b\": [\"{PLACEHOLDER}\"]}}");
        assert_eq!(
            String::from_utf8(m.mask(doc.as_bytes()).unwrap()).unwrap(),
            want,
            "{doc}"
        );
        for size in 1..=doc.len() {
            assert_eq!(
                String::from_utf8(streamed(&m, doc.as_bytes(), size)).unwrap(),
                want,
                "{size}"
            );
        }
    }
}

#[test]
fn a_secret_found_raw_inside_an_escape_takes_the_whole_escape_with_it() {
    // The secret starts with `n`: after a `\` it is the end of an escape, which must not be left half.
    let m = Masker::new(&[(SecretString::from("nabcdefgh12"), PLACEHOLDER.to_string())]).unwrap();
    let masked = m.mask(br#"{"k": "x\nabcdefgh12\u0041"}"#).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&masked),
        format!(r#"{{"k": "x{PLACEHOLDER}\u0041"}}"#)
    );
    serde_json::from_slice::<serde_json::Value>(&masked).unwrap();
}

#[test]
fn separators_found_escaped_are_written_escaped_again() {
    // The secret with a line break between its characters, inside a JSON string: the placeholder's line breaks
    // are written `\n` too, so the string stays one; percent-encoded, they are `%0A`.
    let m = masker();
    let sep = |s: &str, with: &str| s.chars().map(String::from).collect::<Vec<_>>().join(with);
    let doc = format!(r#"{{"k": "{}"}}"#, sep(SECRET, "\\n"));
    let masked = m.mask(doc.as_bytes()).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&masked).unwrap();
    assert_eq!(v["k"], sep(PLACEHOLDER, "\n"));
    let url = sep(SECRET, "%0A");
    assert_eq!(
        String::from_utf8(m.mask(url.as_bytes()).unwrap()).unwrap(),
        sep(PLACEHOLDER, "%0A")
    );
}

#[test]
fn form_encoding_of_a_secret_with_spaces_is_masked() {
    // A passphrase echoed in a form or query: its spaces as `+`, as `%20`, or mixed; whole and streamed.
    let secret = "correct horse battery staple 42";
    let m = Arc::new(Masker::new(&[(SecretString::from(secret), PLACEHOLDER.to_string())]).unwrap());
    let plus = secret.replace(' ', "+");
    let mixed = secret.replacen(' ', "%20", 2).replace(' ', "+");
    for echoed in [plus, mixed] {
        let text = format!("q={echoed}&page=2");
        let want = format!("q={PLACEHOLDER}&page=2");
        assert_eq!(
            String::from_utf8(m.mask(text.as_bytes()).unwrap()).unwrap(),
            want,
            "{text}"
        );
        for size in 1..=text.len() {
            assert_eq!(
                String::from_utf8(streamed(&m, text.as_bytes(), size)).unwrap(),
                want,
                "{size}"
            );
        }
    }
    // A `+` is a `+` for a secret without a space: `sk+live` is not `sk live`.
    let m = masker();
    assert!(m.mask(SECRET.replace('-', "+").as_bytes()).is_none());
}
