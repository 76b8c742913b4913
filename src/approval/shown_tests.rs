#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

#[test]
fn what_could_mislead_is_escaped_visibly() {
    let sly = "a\nb\r\tc\u{202E}d\u{2066}e\u{200B}f\u{7}g\u{FEFF}h\\i\u{61C}j";
    assert_eq!(
        visible(sly),
        "a\\nb\\r\\tc\\u{202e}d\\u{2066}e\\u{200b}f\\u{0007}g\\u{feff}h\\\\i\\u{061c}j"
    );
    // Ordinary text, accents and emoji included, is left alone.
    assert_eq!(visible("/päth/✓?q=1&r=é 😀"), "/päth/✓?q=1&r=é 😀");
    // An escape cannot be forged: a literal `\u{202e}` reads differently from an escaped U+202E.
    assert_ne!(visible("\\u{202e}"), visible("\u{202e}"));
    // The CLI's pass leaves the API's escapes as they are and escapes only what is raw.
    assert_eq!(unmisleading(&visible(sly)), visible(sly));
    assert_eq!(unmisleading("x\u{202e}y\\n"), "x\\u{202e}y\\n");
}

#[test]
fn pretty_json_keeps_its_lines_and_nothing_in_them_misleads() {
    let value = serde_json::json!({"a": "x\u{202e}y", "b": "one\ntwo", "c": "back\\slash", "d": "\u{85}"});
    let pretty = serde_json::to_string_pretty(&value).unwrap();
    let mut out = serde_json::Serializer::new(Vec::new());
    shown_lines(&pretty, &mut out).unwrap();
    let shown: String = serde_json::from_slice(&out.into_inner()).unwrap();
    assert_eq!(shown.lines().count(), 6, "a member a line: {shown}");
    assert!(shown.contains("\"a\": \"x\\u{202e}y\""), "{shown}");
    // JSON's own escapes read as JSON writes them; a raw backslash is JSON's doubled one.
    assert!(shown.contains("\"b\": \"one\\ntwo\""), "{shown}");
    assert!(shown.contains("\"c\": \"back\\\\slash\""), "{shown}");
    assert!(shown.contains("\"d\": \"\\u{0085}\""), "{shown}");
    assert!(!shown.chars().any(|c| c.is_control() && c != '\n'), "{shown}");
}
