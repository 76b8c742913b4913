use super::*;

fn ch(len: usize, c: char) -> Escape {
    Escape::Char { len, c }
}

#[test]
fn every_escape_of_the_grammar_is_read() {
    for (text, want) in [
        ("\\\"", ch(2, '"')),
        ("\\\\", ch(2, '\\')),
        ("\\/", ch(2, '/')),
        ("\\b", ch(2, '\u{8}')),
        ("\\f", ch(2, '\u{c}')),
        ("\\n", ch(2, '\n')),
        ("\\r", ch(2, '\r')),
        ("\\t", ch(2, '\t')),
        ("\\u002d", ch(6, '-')),
        ("\\u002D", ch(6, '-')),
        ("\\u00E9x", ch(6, 'é')),
        ("\\u0000", ch(6, '\0')),
        ("\\uD83D\\uDE00", ch(12, '😀')),
        ("\\ud83d\\ude00!", ch(12, '😀')),
        ("\\u00eA", ch(6, 'ê')),
        ("\\uD83d\\udE00", ch(12, '😀')),
    ] {
        assert_eq!(escape(text.as_bytes(), true), want, "{text:?}");
        assert_eq!(escape(text.as_bytes(), false), want, "{text:?}");
    }
}

#[test]
fn what_is_not_an_escape_is_no_escape() {
    for text in [
        "\\x41",
        "\\U0041",
        "\\u+041",
        "\\u 041",
        "\\u12g4",
        "\\uDE00",
        "\\uD83Dx",
        "\\uD83D\\u0041",
        "\\",
        "\\u12",
    ] {
        assert_eq!(escape(text.as_bytes(), true), Escape::No, "{text:?}");
    }
    assert_eq!(unescape(b"\\q\\u12 \\uD83D!"), b"\\q\\u12 \\uD83D!");
}

#[test]
fn an_escape_the_end_cuts_short_waits_unless_nothing_follows() {
    for text in [
        "\\",
        "\\u",
        "\\u0",
        "\\u00",
        "\\u002",
        "\\uD83D",
        "\\uD83D\\",
        "\\uD83D\\uDE",
    ] {
        assert_eq!(escape(text.as_bytes(), false), Escape::Cut, "{text:?}");
        assert_eq!(escape(text.as_bytes(), true), Escape::No, "{text:?}");
    }
    // What can no longer become an escape is not waited for.
    for text in ["\\ux", "\\uD83Dx", "\\q"] {
        assert_eq!(escape(text.as_bytes(), false), Escape::No, "{text:?}");
    }
}

#[test]
fn unescape_undoes_a_whole_string() {
    assert_eq!(
        unescape(br#"sk\u002dlive\/\u0041\u0062 \"q\" \\u0041 \ud83d\ude00"#),
        "sk-live/Ab \"q\" \\u0041 😀".as_bytes()
    );
}
