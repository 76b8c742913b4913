//! Unit tests for `Spellings`: the byte-for-byte shortcut agrees with the parser.
#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

/// The shortcut never says yes where parsing would say no, nor the other way round.
#[test]
fn usual_spellings_agree_with_parsing() {
    for target in [
        "api.test:443",
        "api.test:8443",
        "10.1.2.3:443",
        "[2001:db8::1]:443",
        "[2001:db8::1]:8443",
    ] {
        let target = Target::from_authority_form(target).unwrap();
        let spellings = Spellings::of(&target, 443);
        for value in [
            "api.test",
            "api.test:443",
            "api.test:8443",
            "API.test",
            "api.test.",
            "api.test:0443",
            "api.test:443:443",
            "api.test ",
            "other.test",
            "api.test.evil",
            "10.1.2.3",
            "10.1.2.3:443",
            "010.1.2.3",
            "[2001:db8::1]",
            "[2001:db8::1]:443",
            "[2001:db8::1]:8443",
            "[2001:DB8::1]",
            "2001:db8::1",
            "",
        ] {
            let parsed = Target::from_host_value(value.as_bytes(), 443).is_ok_and(|t| t == target);
            assert_eq!(
                spellings.named_by(value.as_bytes()),
                parsed,
                "{value:?} against {target}"
            );
        }
        assert!(spellings.named_by(target.to_string().as_bytes()));
    }
}
