//! A type name is defined once in the crate's code (tests aside): a reader never wonders which `State`, `Entry`
//! or `Kind` a line means, and a search for a name finds one definition.

use std::collections::BTreeMap;

use super::layers::{code, sources};

/// Names allowed to be defined more than once, each with why and where: none. The mechanism stays so that an
/// exception has to be written here with its reason; the test fails on a name that is listed but no longer
/// duplicated, so this list only shrinks, and a new duplicate fails at once.
const ALLOWED: &[(&str, &str)] = &[];

/// A file only tests compile (`#[cfg(test)] mod proptests;` and the like), beside the `*_tests.rs` files.
fn test_only(name: &str) -> bool {
    name.ends_with("_tests.rs") || name.ends_with("proptests.rs")
}

/// The names of the structs, enums, unions, traits and type aliases `text` defines; not the associated types of
/// an `impl` or a `trait` (`type Error = ...;` names a member, not a type of the crate).
fn defined(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    // For each open brace, whether it opened an `impl` or a `trait` body.
    let mut blocks: Vec<bool> = Vec::new();
    let mut pending_member_block = false;
    for line in text.lines() {
        let mut words = line.split_whitespace().peekable();
        // Visibility first (`pub`, `pub(crate)`, `pub(super)`, `pub(in path)`), then the keyword.
        while let Some(w) = words.peek().copied().filter(|w| w.starts_with("pub")) {
            words.next();
            if w == "pub(in" {
                words.next();
            }
        }
        let first = words.next().unwrap_or_default();
        let first = if first == "unsafe" {
            words.next().unwrap_or_default()
        } else {
            first
        };
        let in_members = blocks.iter().any(|m| *m);
        if first == "impl" || first.starts_with("impl<") || first == "trait" {
            pending_member_block = true;
        }
        if let Some(name) = words.next()
            && matches!(first, "struct" | "enum" | "union" | "trait" | "type")
            && !(first == "type" && in_members)
        {
            let name: String = name.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if name.starts_with(|c: char| c.is_ascii_uppercase()) {
                out.push(name);
            }
        }
        for c in line.chars() {
            match c {
                '{' => {
                    blocks.push(pending_member_block);
                    pending_member_block = false;
                }
                '}' => {
                    blocks.pop();
                }
                ';' => pending_member_block = false,
                _ => {}
            }
        }
    }
    out
}

#[test]
fn every_type_name_is_defined_once() {
    let mut places: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (path, _, text) in sources() {
        let file = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if test_only(file) {
            continue;
        }
        for name in defined(&code(&text)) {
            places.entry(name).or_default().push(path.display().to_string());
        }
    }
    let twice: BTreeMap<&String, &Vec<String>> = places.iter().filter(|(_, files)| files.len() > 1).collect();
    let allowed = |name: &str| ALLOWED.iter().any(|(n, _)| *n == name);
    let wrong: Vec<String> = twice
        .iter()
        .filter(|(name, _)| !allowed(name))
        .map(|(name, files)| format!("{name}: {}", files.join(", ")))
        .collect();
    assert!(
        wrong.is_empty(),
        "type names defined more than once (give each a name that says what it is):\n{}",
        wrong.join("\n")
    );
    let stale: Vec<&str> = ALLOWED
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| !twice.keys().any(|k| k.as_str() == *n))
        .collect();
    assert!(
        stale.is_empty(),
        "allowed but no longer defined twice (take them off ALLOWED): {stale:?}"
    );
}

#[test]
fn the_definition_reader_sees_every_kind_of_definition() {
    let text = "pub struct A;\npub(crate) enum B {}\npub(super) trait C {\n    type Member;\n}\ntype D = u8;\n\
                struct E<T>(T);\npub(in crate::x) union F {}\nlet struct_like = 1;\nfn g() {}\n\
                impl std::str::FromStr for A {\n    type Err = B;\n}\nmod inner {\n    pub type G = u8;\n}\n";
    assert_eq!(defined(text), ["A", "B", "C", "D", "E", "F", "G"]);
}
