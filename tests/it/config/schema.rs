//! docs/cordon.schema.json, the JSON Schema of cordon.yaml (`cordon config schema`), held to the files it
//! describes and to `cordon check`: the binary prints exactly the shipped file; every example configuration (and
//! the one inside each Kubernetes ConfigMap) and every cordon configuration the docs show validates; the examples
//! name the schema in their `yaml-language-server` modeline; and the schema takes the embedded configuration as
//! `cordon check` does (`schema_keys.rs`: a key neither knows, wherever it is written).

use std::path::{Path, PathBuf};
use std::process::Command;

use jsonschema::error::ValidationErrorKind;
use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};
use serde_json::Value;

use crate::rigs::process::{BIN, cordon};
use crate::rigs::wait::Within;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The shipped schema.
pub(super) fn schema() -> Value {
    serde_json::from_str(&read("docs/cordon.schema.json")).unwrap()
}

pub(super) fn validator(schema: &Value) -> jsonschema::Validator {
    jsonschema::validator_for(schema).unwrap()
}

/// YAML text as the JSON an editor's schema check sees.
pub(super) fn json_of(yaml: &str) -> Result<Value, serde_yaml_ng::Error> {
    serde_yaml_ng::from_str(yaml)
}

/// What `validator` finds wrong with `value`: `at /path: message` lines, each where the value is wrong (not at
/// the `anyOf` of an optional key above it) and none for the `null` branch of an optional key.
pub(super) fn errors(validator: &jsonschema::Validator, value: &Value) -> Vec<String> {
    fn leaves(e: &jsonschema::ValidationError<'_>, out: &mut Vec<String>) {
        match e.kind() {
            ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
                context.iter().flatten().for_each(|e| leaves(e, out));
            }
            ValidationErrorKind::Type { .. } if e.to_string().ends_with(r#"is not of type "null""#) => {}
            _ => out.push(format!("at {}: {e}", e.instance_path())),
        }
    }
    let mut out = Vec::new();
    validator.iter_errors(value).for_each(|e| leaves(&e, &mut out));
    out
}

/// The schema `cordon config schema` prints is the shipped one, and a schema of draft 2020-12 that
/// `jsonschema` compiles (which checks it against the draft's meta-schema).
#[test]
fn the_binary_prints_the_shipped_schema() {
    let (code, out, err) = cordon(&["config", "schema"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out == read("docs/cordon.schema.json"),
        "`cordon config schema` differs from docs/cordon.schema.json; run CORDON_BLESS=1 cargo test --lib config::schema"
    );
    let schema: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert_eq!(schema["title"], "cordon.yaml");
    assert!(jsonschema::meta::is_valid(&schema));
    let (code, out, _) = cordon(&["config", "schema", "--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("cordon config schema > cordon.schema.json"), "{out}");
}

/// The standalone example configurations: config/cordon.yaml (the embedded one) and config/examples/*.yaml.
fn example_files() -> Vec<PathBuf> {
    let mut files = vec![repo().join("config/cordon.yaml")];
    let mut examples: Vec<PathBuf> = std::fs::read_dir(repo().join("config/examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    examples.sort();
    files.extend(examples);
    files
}

/// Every example configuration validates, and names the shipped schema in its first line (the modeline an
/// editor with yaml-language-server reads), by a path that leads to it from the file's folder; so does the
/// cordon.yaml inside each Kubernetes ConfigMap (whose text cannot carry a modeline of its own: the editor sees
/// a ConfigMap).
#[test]
fn the_example_configurations_validate() {
    let v = validator(&schema());
    let shipped = repo().join("docs/cordon.schema.json").canonicalize().unwrap();
    let mut failures = Vec::new();
    let files = example_files();
    assert!(files.len() >= 2, "{files:?}");
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let first = text.lines().next().unwrap_or_default();
        match first.strip_prefix("# yaml-language-server: $schema=") {
            Some(rel) => {
                let target = path.parent().unwrap().join(rel.trim());
                if target.canonicalize().ok().as_ref() != Some(&shipped) {
                    failures.push(format!(
                        "{}: the modeline's {rel} is not docs/cordon.schema.json",
                        path.display()
                    ));
                }
            }
            None => failures.push(format!(
                "{}: the first line is not `# yaml-language-server: $schema=<path to docs/cordon.schema.json>`",
                path.display()
            )),
        }
        let value = json_of(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for e in errors(&v, &value) {
            failures.push(format!("{}: {e}", path.display()));
        }
    }
    let mut configmaps = 0;
    for entry in std::fs::read_dir(repo().join("deploy/kubernetes")).unwrap() {
        let path = entry.unwrap().path().join("configmap.yaml");
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for doc in serde_yaml_ng::Deserializer::from_str(&text) {
            let manifest: Value = serde::Deserialize::deserialize(doc).unwrap();
            let Some(config) = manifest["data"]["cordon.yaml"].as_str() else {
                continue;
            };
            configmaps += 1;
            let value = json_of(config).unwrap_or_else(|e| panic!("{}: data.cordon.yaml: {e}", path.display()));
            for e in errors(&v, &value) {
                failures.push(format!("{} (data.cordon.yaml): {e}", path.display()));
            }
        }
    }
    assert!(
        configmaps >= 2,
        "only {configmaps} ConfigMaps with a cordon.yaml under deploy/kubernetes"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The schema and `cordon check` agree on the embedded configuration: both take it.
#[test]
fn the_schema_takes_the_embedded_configuration_as_check_does() {
    let dir = tempfile::tempdir().unwrap();
    let file = repo().join("config/cordon.yaml");
    let out = Command::new(BIN)
        .args(["check", "--config"])
        .arg(&file)
        .current_dir(dir.path())
        .env_remove("CORDON_CONFIG")
        .timed_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let value = json_of(&read("config/cordon.yaml")).unwrap();
    assert_eq!(errors(&validator(&schema()), &value), Vec::<String>::new());
}

/// The Markdown files whose YAML blocks are checked: README.md and every page under docs/, found at run time.
fn markdown_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut files = vec![repo().join("README.md")];
    walk(&repo().join("docs"), &mut files);
    files.sort();
    files
}

/// The fenced `yaml` (or `yml`) blocks of a Markdown file: (line of the fence, text), with mdBook's
/// `{{#include PATH}}` and `{{#include PATH:ANCHOR}}` replaced by what they include.
fn yaml_blocks(file: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut blocks = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (event, range) in Parser::new(&text).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                let lang = info.split([',', ' ']).next().unwrap_or_default();
                if matches!(lang, "yaml" | "yml") {
                    open = Some((text[..range.start].lines().count() + 1, String::new()));
                }
            }
            Event::Text(t) => {
                if let Some((_, body)) = open.as_mut() {
                    body.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) => blocks.extend(open.take()),
            _ => {}
        }
    }
    for (_, body) in &mut blocks {
        *body = body.lines().map(|l| included(file, l)).collect::<Vec<_>>().join("\n");
    }
    blocks
}

/// A line of a block, or what it includes when it is an mdBook include (whole file, or `ANCHOR: NAME` lines).
fn included(file: &Path, line: &str) -> String {
    let Some(what) = line
        .trim()
        .strip_prefix("{{#include ")
        .and_then(|r| r.strip_suffix("}}"))
    else {
        return line.to_string();
    };
    let (path, anchor) = what
        .trim()
        .split_once(':')
        .map_or((what.trim(), None), |(p, a)| (p, Some(a)));
    let target = file.parent().unwrap().join(path);
    let text = std::fs::read_to_string(&target).unwrap_or_else(|e| panic!("{}: {line}: {e}", file.display()));
    let Some(anchor) = anchor else { return text };
    let start = format!("ANCHOR: {anchor}");
    let end = format!("ANCHOR_END: {anchor}");
    text.lines()
        .skip_while(|l| !l.contains(&start))
        .skip(1)
        .take_while(|l| !l.contains(&end))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A block's elisions, dropped before it is validated: `...` where rules or values would go (`allow: [...]`),
/// and a top-level key with nothing after it (`policies:` at the end of a fragment whose content is elsewhere).
fn elide(value: &mut Value, top: bool) {
    let dots = |v: &Value| v.as_str() == Some("...");
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !(dots(v) || (top && v.is_null())));
            map.values_mut().for_each(|v| elide(v, false));
        }
        Value::Array(items) => {
            items.retain(|v| !dots(v));
            items.iter_mut().for_each(|v| elide(v, false));
        }
        _ => {}
    }
}

/// Every cordon configuration the docs show validates against the schema. A YAML block (each document of it)
/// is taken for one when it is a mapping whose keys are all top-level keys of cordon.yaml: whole files and
/// fragments of one alike (the top level requires no key), after [`elide`]. Other YAML (Kubernetes manifests,
/// alert rules, a lone rule or sandbox) is not a cordon.yaml and is left alone.
#[test]
fn the_configurations_in_the_docs_validate() {
    let schema = schema();
    let top: Vec<&str> = schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let v = validator(&schema);
    let (mut checked, mut failures) = (0, Vec::new());
    for file in markdown_files() {
        let rel = file.strip_prefix(repo()).unwrap().display().to_string();
        for (line, block) in yaml_blocks(&file) {
            for doc in serde_yaml_ng::Deserializer::from_str(&block) {
                let Ok(mut value) = <Value as serde::Deserialize>::deserialize(doc) else {
                    // Not YAML a parser takes (a sketch with `<...>`): nothing an editor could check either.
                    break;
                };
                let Some(map) = value.as_object() else { continue };
                if map.is_empty() || !map.keys().all(|k| top.contains(&k.as_str())) {
                    continue;
                }
                elide(&mut value, true);
                checked += 1;
                for e in errors(&v, &value) {
                    failures.push(format!("{rel}:{line} (```yaml block): {e}"));
                }
            }
        }
    }
    assert!(checked >= 10, "only {checked} cordon configurations found in the docs");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
