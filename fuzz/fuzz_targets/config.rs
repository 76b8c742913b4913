//! The configuration loader (`src/config/`: YAML in, validated `Config` out) on arbitrary text.
//!
//! Checks that the loader never panics (nor runs away: libFuzzer's time and memory limits apply), and that
//! when it refuses a file, it says why with at least one error, each with a message and with where: a line
//! and column, or the path of the offending value. The one exception is what serde_yaml_ng reports without a
//! position about a file it cannot read as one YAML value (several documents, a bad merge, too many alias
//! expansions, ...): then that is the only error, about the whole file.
#![no_main]

use cordon::fuzzing::config;
use libfuzzer_sys::fuzz_target;

/// What serde_yaml_ng (0.10) says, without a position, about a text it cannot read as one YAML value: cordon
/// passes it on as the one error about the whole file.
const WHOLE_FILE: &[&str] = &[
    "EOF while parsing a value",
    "deserializing from YAML containing more than one document is not supported",
    "repetition limit exceeded",
    "expected a mapping or list of mappings for merging, but found scalar",
    "unexpected tagged value in merge",
    "expected a mapping for merging, but found scalar",
    "expected a mapping for merging, but found sequence",
    "empty YAML tag is not allowed",
    "failed to parse YAML number",
];

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Err(errors) = config(&text) {
        assert!(!errors.is_empty(), "refused without an error");
        for (location, path, message) in &errors {
            assert!(!message.is_empty(), "error without a message at {location:?} {path:?}");
            if location.is_none() && path.is_empty() {
                assert!(
                    errors.len() == 1 && WHOLE_FILE.contains(&message.as_str()),
                    "error without a location or path: {message:?}"
                );
            }
        }
    }
});
