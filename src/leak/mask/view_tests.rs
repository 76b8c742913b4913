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
    let r = readings(b"Cd=Ef_%30", true, Holds::default());
    let texts: Vec<&[u8]> = r.iter().map(|v| &v.bytes[..]).collect();
    assert_eq!(texts, vec![&b"Cd\xef_0"[..], &b"Cd=Ef_0"[..], &b"Cd\xef_%30"[..]]);
    // Text with nothing to decode has no reading of its own.
    assert!(readings(b"plain text, nothing = here.\n", false, Holds::default()).is_empty());
}

#[test]
fn json_escapes_of_any_character_decode_mixed_with_literal_text() {
    assert_eq!(decoded(r"sk\u002dlive"), "sk-live");
    assert_eq!(decoded(r"\u0073\u006B\u002D\u006c\u0069\u0076\u0065"), "sk-live");
    assert_eq!(decoded(r"a\/b\\n\u00e9\uD83D\uDE00\x"), "a/b\\n\u{e9}😀\\x");
    // A `\\` is one escape: what follows it is text (`\\u0041` is `\u0041`, read no further).
    let v = read(br"\\u0041", true, Escapes::ALL);
    assert_eq!(v.bytes, br"\u0041");
    assert_eq!(v.units, vec![(0, 2)]);
    // Cut short by the end of a chunk, a JSON escape waits for the rest; a high surrogate for its low half.
    for (text, at) in [(r"ab\", 2), (r"ab\u00", 2), (r"ab\uD83D", 2), (r"ab\uD83D\u", 2)] {
        let v = read(text.as_bytes(), false, Escapes::ALL);
        assert_eq!((v.read_to, v.cut_escape), (at, true), "{text:?}");
        assert_eq!(read(text.as_bytes(), true, Escapes::ALL).read_to, text.len());
    }
}

#[test]
fn an_escape_inside_another_is_read_through_both() {
    // `%5C` is the `\` of `\u002d`; `\u0025` is the `%` of `%2D`: the reading of the reading has `sk-live`.
    for text in [r"sk%5Cu002dlive", r"sk\u00252Dlive", r"sk&#92;u002dlive"] {
        let r = readings(text.as_bytes(), true, Holds::default());
        let second = r.iter().find(|v| v.bytes == b"sk-live");
        assert!(second.is_some(), "{text}");
        let second = second.unwrap();
        // Each byte maps back to the whole of both escapes.
        assert_eq!(second.span[2], (2, text.len() - 4), "{text}");
        assert_eq!(second.unit_start(5), 2);
        assert_eq!(second.unit_end(5), text.len() - 4);
    }
}

#[test]
fn a_secret_with_a_backslash_or_a_space_gets_its_own_reading() {
    let holds = Holds::of([&br"a\nb"[..], b"c d"]);
    assert_eq!(
        holds,
        Holds {
            backslash: true,
            space: true
        }
    );
    let texts = |t: &[u8], h| -> Vec<Vec<u8>> { readings(t, true, h).into_iter().map(|v| v.bytes).collect() };
    // Without a secret that holds a `\`, `\n` is read only as a line break (and read again, as the line break
    // of wrapped text).
    assert_eq!(
        texts(br"x\nb&#99;", Holds::default()),
        vec![b"x\nbc".to_vec(), b"xbc".to_vec()]
    );
    assert_eq!(
        texts(br"x\nb&#99;", holds),
        vec![b"x\nbc".to_vec(), b"xbc".to_vec(), br"x\nbc".to_vec()]
    );
    // `+` is a space only for a secret that holds one.
    assert!(texts(b"c+d", Holds::default()).is_empty());
    assert_eq!(texts(b"c+d", holds), vec![b"c+d".to_vec(), b"c d".to_vec()]);
}
