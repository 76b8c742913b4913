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
