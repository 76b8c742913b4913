//! The JSON Schema of `cordon.yaml`: made from the raw types serde reads the file with (`RawConfig` and each
//! section's `Raw*` types), so it has every key cordon takes and none it refuses (`deny_unknown_fields` is
//! `additionalProperties: false`), and their doc comments as descriptions. `cordon config schema` prints it; `docs/cordon.schema.json` is a copy kept
//! equal to it by a test, for editors (the `yaml-language-server` modeline of the example files).

use schemars::generate::SchemaSettings;
use serde_json::Value;

use super::assemble::RawConfig;

/// What the schema calls itself.
const TITLE: &str = "cordon.yaml";

/// What the schema says of itself.
const DESCRIPTION: &str = "The configuration of cordon, a default-deny egress proxy for AI-agent sandboxes. \
    `cordon check --config FILE` validates a file fully (this schema checks its keys and the form of its values).";

/// The schema (JSON Schema draft 2020-12) as pretty JSON, with a final newline.
pub(crate) fn json_schema() -> String {
    let mut schema = SchemaSettings::draft2020_12()
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<RawConfig>()
        .to_value();
    unprefix(&mut schema);
    if let Value::Object(root) = &mut schema {
        root.insert("title".into(), TITLE.into());
        root.insert("description".into(), DESCRIPTION.into());
    }
    format!("{schema:#}\n")
}

/// The definitions named for what they are (`Listen`), not for the Rust type (`RawListen`): in `$defs` and in
/// every `$ref` to them.
fn unprefix(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(defs)) = map.get_mut("$defs") {
                let taken = std::mem::take(defs);
                *defs = taken
                    .into_iter()
                    .map(|(name, def)| (name.strip_prefix("Raw").map_or(name.clone(), str::to_owned), def))
                    .collect();
            }
            if let Some(Value::String(to)) = map.get_mut("$ref")
                && let Some(name) = to.strip_prefix("#/$defs/Raw")
            {
                *to = format!("#/$defs/{name}");
            }
            map.values_mut().for_each(unprefix);
        }
        Value::Array(items) => items.iter_mut().for_each(unprefix),
        _ => {}
    }
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;
