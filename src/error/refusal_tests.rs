#![expect(clippy::unwrap_used, clippy::panic, reason = "tests")]

//! The refusal a sandbox reads: every reason renders the documented `cordon.refusal/1` fields, JSON or text as
//! `Accept` prefers, and no rendering says a word of a way around cordon or echoes what it must not.

use http::HeaderMap;
use http_body_util::BodyExt;

use super::*;
use crate::error::ProxyError;
use crate::reason::{Answer, HINT_MAX, Whose};

/// What a refused request looked like: a path, its query never (the audit record keeps none).
fn sample() -> Subject {
    Subject {
        method: Some("GET".into()),
        host: Some("example.com".into()),
        port: Some(443),
        path: Some("/v1/things".into()),
    }
}

fn facts<'a>(reason: Reason, refused: &'a Subject) -> Facts<'a> {
    Facts {
        reason,
        status: reason.answer().http_status().unwrap_or(500),
        message: format!("refused: {}", reason.meaning()),
        refused,
        retry_after: None,
    }
}

/// Words of advice to go around cordon: none may appear in what a sandbox reads.
const BYPASS: &[&str] = &[
    "no_proxy",
    "noproxy",
    "unset",
    "bypass",
    "http_proxy=",
    "https_proxy=",
    "--proxy",
    "another proxy",
    "other proxy",
    "without the proxy",
    "without a proxy",
    "socks",
    "vpn",
    "tor browser",
    "disable",
    "turn off",
];

/// Words that, whole, advise going around cordon ("direct" alone: "misdirected" is a reason's word).
const BYPASS_WORDS: &[&str] = &["direct", "directly", "proxyless"];

fn assert_no_bypass(what: &str, text: &str) {
    let lower = text.to_ascii_lowercase();
    for word in BYPASS {
        assert!(
            !lower.contains(word),
            "{what} suggests a way around cordon ({word:?}): {text}"
        );
    }
    for word in lower.split(|c: char| !c.is_ascii_alphanumeric()) {
        assert!(
            !BYPASS_WORDS.contains(&word),
            "{what} suggests a way around cordon ({word:?}): {text}"
        );
    }
}

/// Every reason a sandbox can read over HTTP renders a body that parses as JSON with every documented field of
/// its documented type, and says the same in text.
#[test]
fn every_reason_renders_the_documented_fields() {
    let refused = sample();
    let whose: Vec<&str> = Whose::ALL.iter().map(|w| w.as_str()).collect();
    for r in Reason::ALL {
        let f = facts(*r, &refused);
        let (ct, body) = f.body(Format::Json);
        assert_eq!(ct, REFUSAL_TYPE);
        let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{}: {e}: {body}", r.code()));
        assert_eq!(v["schema"], SCHEMA);
        assert_eq!(v["reason"], r.code());
        assert_eq!(v["status"], f.status);
        assert!(whose.contains(&v["whose"].as_str().unwrap()), "{}", r.code());
        assert_eq!(v["ask"], r.ask());
        assert_eq!(v["refused"]["method"], "GET");
        assert_eq!(v["refused"]["host"], "example.com");
        assert_eq!(v["refused"]["port"], 443);
        assert!(v["refused"]["path"].is_string() || v["refused"]["path"].is_null());
        for key in ["message", "meaning", "hint", "no_way_around"] {
            assert!(!v[key].as_str().unwrap().is_empty(), "{}: {key}", r.code());
        }
        assert_eq!(
            v.as_object().unwrap().len(),
            10,
            "{}: only the documented fields: {v}",
            r.code()
        );
        let (ct, text) = f.body(Format::Text);
        assert!(ct.starts_with("text/plain"));
        assert!(text.starts_with("cordon: "), "{text}");
        assert!(text.contains(&format!("reason: {} (", r.code())), "{text}");
        assert!(text.contains(NO_WAY_AROUND), "{text}");
        // A refusal a sandbox reads is on a side it can act on.
        if matches!(r.answer(), Answer::Status(_) | Answer::InProtocol) && !matches!(r.whose(), Whose::Record) {
            assert!(!r.hint().starts_with("Nothing"), "{}", r.code());
        }
    }
}

/// A limit's refusal says how long to wait, in the body and as `Retry-After`.
#[test]
fn a_limit_says_how_long_to_wait() {
    let refused = sample();
    let mut f = facts(Reason::SandboxRate, &refused);
    f.retry_after = Some(7);
    let v: serde_json::Value = serde_json::from_str(&f.body(Format::Json).1).unwrap();
    assert_eq!(v["retry_after"], 7);
    assert_eq!(v["whose"], "limit");
    assert!(f.body(Format::Text).1.contains("retry after: 7s"));
}

/// No reason's body (JSON, text) or headers, and no hint, suggests a way around cordon; each says a way around
/// will not work.
#[test]
fn no_refusal_suggests_a_way_around_cordon() {
    let refused = sample();
    assert_no_bypass("NO_WAY_AROUND", NO_WAY_AROUND);
    for r in Reason::ALL {
        let f = facts(*r, &refused);
        for format in [Format::Json, Format::Text] {
            let body = f.body(format).1;
            assert_no_bypass(r.code(), &body);
            assert!(body.contains(NO_WAY_AROUND), "{}: {body}", r.code());
        }
        let mut h = HeaderMap::new();
        f.headers(&mut h);
        for (name, value) in &h {
            assert_no_bypass(name.as_str(), value.to_str().unwrap());
        }
    }
    // And every refusal cordon builds, with its own public message.
    for e in crate::error::tests::every_error() {
        assert_no_bypass("public message", &e.public_message());
    }
}

/// The hint travels in a header: ASCII, no CR or LF, at most HINT_MAX bytes, a sentence.
#[test]
fn every_hint_is_header_safe() {
    for r in Reason::ALL {
        let hint = r.hint();
        assert!(hint.len() <= HINT_MAX, "{}: {} bytes", r.code(), hint.len());
        assert!(hint.bytes().all(|b| b == b' ' || b.is_ascii_graphic()), "{}", r.code());
        assert!(hint.ends_with('.'), "{}", r.code());
    }
}

/// The `x-cordon-*` headers are ASCII without CR or LF and bounded, whatever the path held.
#[test]
fn the_headers_are_header_safe_and_bounded() {
    let long = format!("/{}", "a".repeat(5000));
    for path in [long.as_str(), "/caf\u{e9}", "/a\r\nx-evil: 1", "/ok"] {
        let refused = Subject {
            path: Some(path.into()),
            ..sample()
        };
        let f = facts(Reason::PathNotAllowed, &refused);
        let mut h = HeaderMap::new();
        f.headers(&mut h);
        for (name, value) in &h {
            let v = value.to_str().unwrap();
            assert!(v.len() <= HEADER_MAX, "{name}: {} bytes", v.len());
            assert!(!v.contains('\r') && !v.contains('\n'));
        }
        assert_eq!(h[ASK_HEADER], "yes");
        assert_eq!(h[WHOSE_HEADER], "policy");
        let shown = h[REFUSED_HEADER].to_str().unwrap();
        match path {
            "/ok" => assert_eq!(shown, "GET example.com:443 /ok"),
            // Bytes a path may not carry are withheld, not escaped.
            "/caf\u{e9}" | "/a\r\nx-evil: 1" => assert_eq!(shown, "GET example.com:443 [withheld]"),
            _ => assert!(
                shown.starts_with("GET example.com:443 /aaa") && shown.ends_with("..."),
                "{shown}"
            ),
        }
    }
}

/// SECURITY: a placeholder in the path, in any case or percent-encoding, is withheld; the path of a refusal
/// about what the request carries is not shown at all.
#[test]
fn a_placeholder_in_the_path_is_never_echoed() {
    let ph = "cordon-ph-0123456789abcdef0123456789abcdef";
    let encoded: String = ph.bytes().map(|b| format!("%{b:02X}")).collect();
    let spellings = [
        format!("/x/{ph}"),
        format!("/x/{}", ph.to_uppercase()),
        format!("/x/{encoded}"),
        "/x/cordon%2Dph-0123456789abcdef0123456789abcdef".to_string(),
    ];
    for path in &spellings {
        let refused = Subject {
            path: Some(path.clone()),
            ..sample()
        };
        for r in [Reason::NoRule, Reason::PathNotAllowed, Reason::MethodNotAllowed] {
            let f = facts(r, &refused);
            for format in [Format::Json, Format::Text] {
                let body = f.body(format).1;
                assert!(!body.contains("0123456789abcdef"), "{path}: {body}");
                assert!(body.contains("[withheld]"), "{path}: {body}");
            }
        }
    }
    let refused = sample();
    for r in [
        Reason::CredentialExfiltration,
        Reason::SecretExfiltration,
        Reason::AwsSignatureKey,
    ] {
        let v: serde_json::Value = serde_json::from_str(&facts(r, &refused).body(Format::Json).1).unwrap();
        assert!(v["refused"]["path"].is_null(), "{}", r.code());
    }
}

fn accept(values: &[&str]) -> Format {
    let mut h = HeaderMap::new();
    for v in values {
        h.append(http::header::ACCEPT, http::HeaderValue::from_str(v).unwrap());
    }
    Format::of(&h)
}

/// JSON when Accept names it and prefers it to text (with its q-values, wildcards and specificity read as RFC 9110
/// says), text otherwise.
#[test]
fn the_format_is_what_accept_prefers() {
    use Format::{Json, Text};
    let cases: &[(&[&str], Format)] = &[
        (&[], Text),
        (&[""], Text),
        // Anything: text first (git shows it as `remote:` lines); JSON only where it is named and preferred.
        (&["*/*"], Text),
        (&["application/json"], Json),
        (&["APPLICATION/JSON"], Json),
        (&["application/*"], Json),
        (&["application/json;q=0"], Text),
        (&["application/json;q=0, */*"], Text),
        (&["application/json; q=0.0, text/plain"], Text),
        (&["text/plain"], Text),
        (&["text/plain, application/json;q=0.5"], Text),
        (&["text/plain;q=0.4, application/json;q=0.5"], Json),
        (&["text/html,application/xhtml+xml,*/*;q=0.8"], Text),
        // What the MCP SDKs send.
        (&["application/json, text/event-stream"], Json),
        (&["text/html"], Text),
        (&["text/plain;q=0.1", "application/json"], Json),
        (&["not a media type"], Text),
    ];
    for (values, want) in cases {
        assert_eq!(accept(values), *want, "Accept: {values:?}");
    }
    let mut h = HeaderMap::new();
    h.insert(
        http::header::ACCEPT,
        http::HeaderValue::from_bytes(b"application/json\xff").unwrap(),
    );
    assert_eq!(Format::of(&h), Text);
}

/// The response of every refusal cordon builds carries the facts: JSON when asked, `x-cordon-*` headers always;
/// a refusal in a protocol's own words keeps its body.
#[tokio::test]
async fn every_refusal_response_carries_the_facts() {
    let refused = sample();
    for e in crate::error::tests::every_error() {
        let resp = e.refusal(&refused, Format::Json);
        let h = resp.headers().clone();
        assert_eq!(h["x-cordon-reason"], e.reason().code());
        assert_eq!(h[ASK_HEADER], if e.reason().ask() { "yes" } else { "no" });
        assert_eq!(h[WHOSE_HEADER], e.reason().whose().as_str());
        assert!(h.contains_key(HINT_HEADER) && h.contains_key(REFUSED_HEADER));
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        if let ProxyError::Protocol(p) = &e {
            assert_eq!(body.as_ref(), p.body.as_slice());
            continue;
        }
        assert_eq!(h["content-type"], REFUSAL_TYPE);
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["reason"], e.reason().code());
        assert_eq!(v["status"], e.status().as_u16());
        assert_eq!(v["message"], e.public_message());
    }
}
