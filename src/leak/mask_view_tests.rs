#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

fn decoded(text: &str) -> String {
    String::from_utf8(read(text.as_bytes(), true, Escapes::ALL).bytes).unwrap()
}

#[test]
fn escapes_of_every_kind_decode_mixed_with_literal_text() {
    assert_eq!(decoded("%73k%2D%6c%49ve"), "sk-lIve");
    assert_eq!(decoded("s=6B-live=3D=\r\nx=\ny"), "sk-live=xy");
    assert_eq!(
        decoded("&#115;&#x6B;&#X2d;&#0000108;&#x0069;ve&amp;&lt;&quot;&apos;&sol;&plus;"),
        "sk-live&<\"'/+"
    );
    assert_eq!(decoded("&#x20AC;&#128512;"), "€😀");
    // Wrapped encoded text loses its line breaks; prose keeps them, and so do other line ends.
    assert_eq!(decoded("QUJD\r\nREVG\nR0g="), "QUJDREVGR0g=");
    assert_eq!(decoded("end.\nnext}\r\n{x"), "end.\nnext}\r\n{x");
}

#[test]
fn what_is_not_an_escape_stays_as_it_is() {
    for text in [
        "100% sure",
        "%zz",
        "a=b&c=d",
        "x = y",
        "&unknown;",
        "&#;",
        "&#x;",
        "&#xZZ;",
        "&#123456789;",
        "&#xFFFFFFFF;",
        "&#xD800;",
        "&",
        "=",
        "%",
        "a\rb",
    ] {
        assert_eq!(decoded(text), text, "{text:?}");
        assert!(!differs(text.as_bytes(), true), "{text:?}");
    }
}

#[test]
fn an_escape_cut_by_the_end_of_a_chunk_waits_for_the_rest() {
    for (text, at) in [
        ("ab%", 2),
        ("ab%4", 2),
        ("ab=", 2),
        ("ab=4", 2),
        ("ab=\r", 2),
        ("ab&", 2),
        ("ab&#x00", 2),
        ("ab&am", 2),
        ("QUJD\r", 4),
        ("QUJD\n", 4),
        ("QUJD\r\n", 4),
    ] {
        let v = read(text.as_bytes(), false, Escapes::ALL);
        assert_eq!(v.read_to, at, "{text:?}");
        assert_eq!(v.cut_escape, !matches!(text.as_bytes()[at], b'\r' | b'\n'), "{text:?}");
        assert!(differs(text.as_bytes(), false));
        // At the end of the body, nothing is waited for.
        assert_eq!(read(text.as_bytes(), true, Escapes::ALL).read_to, text.len());
    }
    // A line break after prose is not cut: it is not inside encoded text.
    assert_eq!(read(b"done.\n", false, Escapes::ALL).read_to, 6);
}

#[test]
fn each_decoded_byte_knows_where_it_came_from() {
    let v = read("a&#x2F;b\r\nc".as_bytes(), true, Escapes::ALL);
    assert_eq!(v.bytes, b"a/bc");
    assert_eq!(v.span, vec![(0, 1), (1, 7), (7, 8), (10, 11)]);
    assert_eq!(v.units, vec![(1, 7), (8, 10)]);
    assert_eq!(v.index_at(7), 2);
    assert_eq!(v.unit_start(3), 1);
    assert_eq!(v.unit_start(7), 7);
    assert_eq!(v.unit_start(9), 8);
    // A character decoded to several bytes maps each of them to its reference.
    let v = read("&#x20AC;".as_bytes(), true, Escapes::ALL);
    assert_eq!(v.span, vec![(0, 8); 3]);
}

#[test]
fn a_secret_holding_what_reads_as_an_escape_is_read_again_without_that_kind() {
    // `Cd=Ef` with its `d` percent-encoded: read with `=XX`, `=Ef` is one byte; read without, it is text.
    let r = readings(b"Cd=Ef_%30", true);
    let texts: Vec<&[u8]> = r.iter().map(|v| &v.bytes[..]).collect();
    assert_eq!(texts, vec![&b"Cd\xef_0"[..], &b"Cd=Ef_0"[..], &b"Cd\xef_%30"[..]]);
    // Text with nothing to decode has no reading of its own.
    assert!(readings(b"plain text, nothing = here.\n", false).is_empty());
}
