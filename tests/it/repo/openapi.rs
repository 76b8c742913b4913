//! `docs/openapi.yaml` describes exactly the admin API's routes (`cordon::admin::ROUTES`), each with a success
//! answer, and every `/v1` one with its `401`.

use std::collections::BTreeSet;

use serde_yaml_ng::Value;

const METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

pub(crate) fn document() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/openapi.yaml");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{path} is not YAML: {e}"))
}

/// Follow a local `$ref` (`#/components/...`), repeatedly.
pub(crate) fn resolve<'a>(doc: &'a Value, mut v: &'a Value) -> &'a Value {
    for _ in 0..16 {
        let Some(r) = v.get("$ref").and_then(Value::as_str) else {
            return v;
        };
        let pointer = r
            .strip_prefix("#/")
            .unwrap_or_else(|| panic!("only local references are used: {r}"));
        v = pointer.split('/').fold(doc, |node, key| {
            let key = key.replace("~1", "/").replace("~0", "~");
            node.get(key.as_str())
                .unwrap_or_else(|| panic!("{r} points at nothing"))
        });
    }
    panic!("a reference cycle")
}

/// Every (METHOD, path, operation) under `paths`.
fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let paths = doc.get("paths").and_then(Value::as_mapping).expect("a `paths` mapping");
    let mut ops = Vec::new();
    for (path, item) in paths {
        let path = path.as_str().expect("paths are strings");
        let item = item.as_mapping().expect("a path item is a mapping");
        for (key, op) in item {
            let key = key.as_str().expect("path item keys are strings");
            if METHODS.contains(&key) {
                ops.push((key.to_uppercase(), path.to_string(), op));
            }
        }
    }
    ops
}

fn statuses(doc: &Value, op: &Value) -> Vec<String> {
    resolve(doc, op.get("responses").expect("every operation has responses"))
        .as_mapping()
        .expect("responses is a mapping")
        .keys()
        .map(|k| match k {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            other => panic!("a response key that is no status: {other:?}"),
        })
        .collect()
}

#[test]
fn the_openapi_document_describes_exactly_the_admin_routes() {
    let doc = document();
    let described: BTreeSet<(String, String)> = operations(&doc)
        .into_iter()
        .map(|(method, path, _)| (method, path))
        .collect();
    let served: BTreeSet<(String, String)> = cordon::admin::ROUTES
        .iter()
        .map(|(method, path)| (method.to_string(), path.to_string()))
        .collect();
    assert_eq!(served.len(), cordon::admin::ROUTES.len(), "ROUTES lists a route twice");
    let missing: Vec<_> = served.difference(&described).collect();
    let extra: Vec<_> = described.difference(&served).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "docs/openapi.yaml does not match cordon::admin::ROUTES\n  served but not described: {missing:?}\n  \
         described but not served: {extra:?}"
    );
}

#[test]
fn every_operation_answers_success_and_every_v1_operation_401() {
    let doc = document();
    for (method, path, op) in operations(&doc) {
        let codes = statuses(&doc, op);
        assert!(
            codes.iter().any(|c| c.starts_with('2')),
            "{method} {path} lists no 2xx response: {codes:?}"
        );
        let security = op.get("security").and_then(Value::as_sequence);
        if path.starts_with("/v1/") {
            assert!(
                codes.iter().any(|c| c == "401"),
                "{method} {path} lists no 401: {codes:?}"
            );
            let unauthorized = resolve(&doc, &op["responses"]["401"]);
            assert!(
                unauthorized["headers"].get("WWW-Authenticate").is_some(),
                "the 401 of {method} {path} does not declare WWW-Authenticate"
            );
            assert!(
                security.is_none_or(|s| !s.is_empty()),
                "{method} {path} needs the admin token but says it needs no security"
            );
        } else {
            assert!(
                security.is_some_and(|s| s.is_empty()),
                "{method} {path} is open but does not say `security: []`"
            );
        }
        if path.contains("{id}") {
            let mut params: Vec<&Value> = Vec::new();
            for level in [&doc["paths"][path.as_str()], op] {
                if let Some(list) = level.get("parameters").and_then(Value::as_sequence) {
                    params.extend(list.iter().map(|p| resolve(&doc, p)));
                }
            }
            assert!(
                params
                    .iter()
                    .any(|p| p["name"] == "id" && p["in"] == "path" && p["required"] == true),
                "{method} {path} does not declare its `id` path parameter"
            );
        }
    }
    let global = doc["security"].as_sequence().expect("a global security requirement");
    assert!(
        global.iter().any(|s| s.get("bearerAuth").is_some()),
        "the global security requirement is not bearerAuth"
    );
}

#[test]
fn every_reference_in_the_openapi_document_resolves() {
    fn walk<'a>(doc: &'a Value, v: &'a Value, seen: &mut usize) {
        match v {
            Value::Mapping(m) => {
                if m.contains_key("$ref") {
                    resolve(doc, v);
                    *seen += 1;
                }
                for child in m.values() {
                    walk(doc, child, seen);
                }
            }
            Value::Sequence(s) => s.iter().for_each(|child| walk(doc, child, seen)),
            _ => {}
        }
    }
    let doc = document();
    let mut seen = 0;
    walk(&doc, &doc, &mut seen);
    assert!(seen > 0, "no references at all: is this the right file?");
}
