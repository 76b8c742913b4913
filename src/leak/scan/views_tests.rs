use base64::Engine;

use super::*;

const PH: &str = "cordon-ph-0123456789abcdef0123456789abcdef";

/// Whether the placeholder, or its base64 (which the scanner looks for as such), is in a reading of `text`.
fn found(text: &str) -> bool {
    let b64_forms = crate::leak::forms::forms(PH.as_bytes());
    views(text.as_bytes()).iter().any(|v| {
        v.windows(PH.len()).any(|w| w.eq_ignore_ascii_case(PH.as_bytes()))
            || b64_forms.iter().any(|f| v.windows(f.len()).any(|w| w == f.as_slice()))
    })
}

#[test]
fn encodings_a_receiver_would_undo_are_seen_through() {
    let b64 = base64::engine::general_purpose::STANDARD.encode(format!("user:{PH}"));
    let b64url = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("??>>{PH}"));
    let once: String = PH.bytes().map(|b| format!("%{b:02X}")).collect();
    let twice = once.replace('%', "%25");
    let json = PH.replace('-', "\\u002d");
    for hidden in [
        PH.to_string(),
        once.clone(),
        twice,
        format!("q={once}&x=1"),
        json.clone(),
        format!("{{\"k\":\"{json}\"}}"),
        b64.clone(),
        format!("Basic {b64}"),
        format!("xyz{b64}"),
        b64url,
        format!("a={}&b={}", &PH[..12], &PH[12..]),
    ] {
        assert!(found(&hidden), "{hidden}");
    }
    assert!(!found("nothing like it here, not even cordon-ph-"));
}

#[test]
fn decoders_leave_what_is_not_theirs_alone() {
    assert_eq!(percent_decode(b"a%zzb%4"), b"a%zzb%4");
    assert_eq!(percent_decode(b"a+b%41"), b"a bA");
    assert_eq!(json_unescape(b"\\q\\u12"), b"\\q\\u12");
    assert_eq!(json_unescape(b"\\ud83d\\ude00!"), "\u{1F600}!".as_bytes());
    assert_eq!(form_values_joined(b"a=1&b=2&c"), b"12c");
    assert_eq!(views(b"plain").len(), 1);
}

#[test]
fn json_escapes_are_read_as_masking_reads_them() {
    // Any character escaped, hex digits of either case, a surrogate pair; a sign before the digits is no hex.
    let all: String = PH.bytes().map(|b| format!("\\u{b:04X}")).collect();
    assert!(found(&all));
    assert!(found(&PH.replacen('c', "\\u0063", 1).replace('-', "\\u002D")));
    assert_eq!(json_unescape(b"\\u+041\\uD83D\\uDE00"), "\\u+041\u{1F600}".as_bytes());
}
