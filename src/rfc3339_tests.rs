#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

#[test]
fn written_as_before_to_the_second_and_the_millisecond() {
    let t = UNIX_EPOCH + Duration::from_millis(1_796_253_706_123);
    assert_eq!(seconds(t), "2026-12-02T23:21:46Z");
    assert_eq!(millis(t), "2026-12-02T23:21:46.123Z");
    assert_eq!(millis(UNIX_EPOCH + Duration::from_secs(1)), "1970-01-01T00:00:01.000Z");
    assert_eq!(unix_seconds(0), "1970-01-01T00:00:00Z");
    // What humantime wrote, byte for byte (the audit chain's and the API's format must not change).
    for t in [t, UNIX_EPOCH, UNIX_EPOCH + Duration::from_nanos(999_999_999)] {
        assert_eq!(seconds(t), humantime::format_rfc3339_seconds(t).to_string());
        assert_eq!(millis(t), humantime::format_rfc3339_millis(t).to_string());
    }
}

#[test]
fn the_extremes_are_clamped_to_what_parses() {
    let far = UNIX_EPOCH + Duration::from_secs(400_000_000_000);
    assert_eq!(seconds(far), "9999-12-31T23:59:59Z");
    assert_eq!(unix_seconds(-5), "1970-01-01T00:00:00Z");
    assert_eq!(parse(&seconds(far)), Some(UNIX_EPOCH + LAST));
}

#[test]
fn parsed_in_any_precision_and_offset() {
    let t = UNIX_EPOCH + Duration::from_secs(1_796_253_706);
    assert_eq!(parse("2026-12-02T23:21:46Z"), Some(t));
    assert_eq!(parse("2026-12-03T00:21:46+01:00"), Some(t));
    assert_eq!(parse("2026-12-02T23:21:46.5Z"), Some(t + Duration::from_millis(500)));
    assert_eq!(
        parse("2026-12-02T23:21:46.000000001Z"),
        Some(t + Duration::from_nanos(1))
    );
    for bad in [
        "",
        "2026-12-02",
        "2026-13-02T00:00:00Z",
        "yesterday",
        "1969-12-31T23:59:59Z",
    ] {
        assert_eq!(parse(bad), None, "{bad}");
    }
    assert_eq!(parse(&millis(t)).unwrap(), t);
}
