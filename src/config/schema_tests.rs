#![expect(clippy::unwrap_used, reason = "tests")]

use serde_json::json;

use super::*;

/// docs/cordon.schema.json is what `cordon config schema` prints; `CORDON_BLESS=1` writes it anew.
#[test]
fn the_shipped_schema_is_the_generated_one() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/cordon.schema.json");
    let shipped = std::fs::read_to_string(path).unwrap_or_default();
    let want = json_schema();
    if shipped != want && std::env::var_os("CORDON_BLESS").is_some() {
        std::fs::write(path, &want).unwrap();
        return;
    }
    assert!(
        shipped == want,
        "docs/cordon.schema.json differs from the schema of src/config/raw*; run CORDON_BLESS=1 cargo test --lib config::schema"
    );
}

fn schema() -> Value {
    serde_json::from_str(&json_schema()).unwrap()
}

/// Every mapping of the file refuses keys it does not know, as serde's `deny_unknown_fields` does, and no
/// definition keeps the Rust name of its type.
#[test]
fn every_mapping_is_closed() {
    let schema = schema();
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert_eq!(schema["title"], "cordon.yaml");
    assert_eq!(schema["additionalProperties"], false);
    let defs = schema["$defs"].as_object().unwrap();
    let mut closed = 0;
    for (name, def) in defs {
        assert!(!name.starts_with("Raw"), "{name} keeps its Rust name");
        if def.get("properties").is_some() {
            assert_eq!(def["additionalProperties"], false, "{name} lets unknown keys by");
            closed += 1;
        }
    }
    assert!(closed >= 50, "only {closed} mappings");
    assert!(!json_schema().contains("#/$defs/Raw"));
}

/// The schema of one definition, with the others it may refer to.
fn def(name: &str) -> jsonschema::Validator {
    let whole = schema();
    let mut one = whole["$defs"][name].clone();
    one["$schema"] = whole["$schema"].clone();
    one["$defs"] = whole["$defs"].clone();
    jsonschema::validator_for(&one).unwrap()
}

/// The duration pattern takes what humantime reads, and refuses what it refuses.
#[test]
fn durations_are_what_humantime_reads() {
    let v = def("Duration");
    for text in [
        "30s", "500ms", "5m", "1h", "1h30m", "1h 30m", "7d", "2days", "1.5h", "10 sec", "3w", "1M", "1y", "250us",
        "1µs", "15mins", " 1s",
    ] {
        assert!(humantime::parse_duration(text).is_ok(), "{text:?}");
        assert!(v.is_valid(&json!(text)), "the schema refuses {text:?}");
    }
    for text in ["30", "s", "", "1x", "1h-", "-1s", "1.s", "1 parsec", "one second"] {
        assert!(humantime::parse_duration(text).is_err(), "{text:?}");
        assert!(!v.is_valid(&json!(text)), "the schema takes {text:?}");
    }
    assert!(!v.is_valid(&json!(30)));
}

/// The size pattern takes what bytesize reads, and refuses what it refuses.
#[test]
fn sizes_are_what_bytesize_reads() {
    let v = def("Size");
    for text in [
        "64KiB", "100MiB", "1GB", "1 GiB", "1.5MiB", "512", "10kb", "2g", "7B", "1Ti",
    ] {
        assert!(text.parse::<bytesize::ByteSize>().is_ok(), "{text:?}");
        assert!(v.is_valid(&json!(text)), "the schema refuses {text:?}");
    }
    for text in ["", "MiB", "1.5", "1 parsecs", "64 KiBs", "-1KiB", "1e3"] {
        assert!(text.parse::<bytesize::ByteSize>().is_err(), "{text:?}");
        assert!(!v.is_valid(&json!(text)), "the schema takes {text:?}");
    }
    assert!(v.is_valid(&json!(1024)));
}

/// A secret reference and a credential's source name exactly one place.
#[test]
fn a_secret_is_in_one_place() {
    let v = def("SecretRef");
    assert!(v.is_valid(&json!({"file": "state/key"})));
    assert!(v.is_valid(&json!({"env": "TOKEN"})));
    assert!(!v.is_valid(&json!({})));
    assert!(!v.is_valid(&json!({"file": "a", "env": "B"})));
    assert!(!v.is_valid(&json!({"path": "a"})));
    let v = def("Source");
    assert!(v.is_valid(&json!({"vault": "github"})));
    assert!(!v.is_valid(&json!({"vault": "github", "env": "X"})));
}
