//! The source tree keeps the shape `src/lib.rs` maps: every module imports only modules of a lower rank, the
//! audit record is filled by the pipeline alone, no source file grows past the size a reader can hold, and unit
//! tests live beside their file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The map of `src/lib.rs`, bottom to top: a module may import only modules of a lower rank.
const RANKS: &[&[&str]] = &[
    &["reason", "locks", "names"],
    &[
        "addr",
        "target",
        "principal",
        "limits",
        "framing",
        "dns",
        "file_lock",
        "secret_file",
        "supervise",
        "rfc3339",
        "version",
        "systemd",
        "sigv4",
    ],
    &["body", "identity", "net", "policy", "pg", "metrics", "placeholder"],
    &["mcp", "graphql", "llm"],
    &["control", "error", "tls", "leak"],
    &["audit", "config", "upstream"],
    &["webhook", "oidc"],
    &["approval", "secrets", "session", "logging", "preview"],
    &["inject", "sandbox_env", "otlp"],
    &["generation"],
    &["replica", "violation"],
    &["state"],
    &["proxy", "reload", "preflight"],
    &["admin"],
    &["jail"],
    &["cli"],
    &["fuzzing"],
];

/// The longest a source file (tests aside) may be.
const MAX_LINES: usize = 450;

fn rank(module: &str) -> Option<usize> {
    RANKS.iter().position(|r| r.contains(&module))
}

/// Every non-test source file under `src/`, with its top-level module and its text before any inline tests.
pub(super) fn sources() -> Vec<(PathBuf, String, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    files.sort();
    files
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            !name.ends_with("_tests.rs") && name != "lib.rs" && name != "main.rs"
        })
        .map(|p| {
            let rel = p.strip_prefix(&src).unwrap();
            let top = rel.components().next().unwrap().as_os_str().to_str().unwrap();
            let module = top.trim_end_matches(".rs").to_string();
            let text = std::fs::read_to_string(&p).unwrap();
            (rel.to_path_buf(), module, text)
        })
        .collect()
}

/// The text without comments (a doc comment may name any module) and without the items `#[cfg(test)]` gates
/// (a `mod tests;` line, a test-only fn, impl or inline module): everything else in the file is read, however
/// far down it comes.
pub(super) fn code(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() != "#[cfg(test)]" {
            out.push(lines[i]);
            i += 1;
            continue;
        }
        // The gated item: its other attributes, then up to its `;` or its closing brace.
        i += 1;
        while i < lines.len() && lines[i].trim_start().starts_with("#[") {
            i += 1;
        }
        let mut depth = 0usize;
        let mut opened = false;
        while i < lines.len() {
            let line = lines[i];
            i += 1;
            let mut ended = false;
            for c in line.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth = depth.saturating_sub(1),
                    ';' if depth == 0 && !opened => ended = true,
                    _ => {}
                }
            }
            if ended || opened && depth == 0 {
                break;
            }
        }
    }
    out.join("\n")
}

/// The top-level modules `text` names as `crate::<module>` or in `crate::{a, b::c}`.
fn imports(text: &str) -> Vec<String> {
    let word = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit())
            .collect()
    };
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        let after = &rest[i + "crate::".len()..];
        if !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            if let Some(group) = after.strip_prefix('{') {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                out.extend(group.split(',').map(word).filter(|w| !w.is_empty()));
            } else {
                let name = word(after);
                if !name.is_empty() {
                    out.push(name);
                }
            }
        }
        rest = after;
    }
    out
}

#[test]
fn every_module_is_on_the_map_of_lib_rs() {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let mut declared: Vec<String> = lib
        .lines()
        .filter_map(|l| {
            l.trim()
                .strip_prefix("pub mod ")
                .or_else(|| l.trim().strip_prefix("mod "))
        })
        .map(|m| m.trim_end_matches(';').to_string())
        .collect();
    declared.sort();
    let mut mapped: Vec<String> = RANKS.iter().flat_map(|r| r.iter().map(|m| m.to_string())).collect();
    mapped.sort();
    assert_eq!(
        declared, mapped,
        "src/lib.rs declares other modules than its map (and this test) rank"
    );
    for module in &declared {
        assert!(
            lib.contains(&format!("`{module}`")),
            "src/lib.rs's map does not name `{module}`"
        );
    }
}

#[test]
fn modules_import_only_downward() {
    let mut wrong: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (path, module, text) in sources() {
        let Some(own) = rank(&module) else {
            wrong
                .entry(path.display().to_string())
                .or_default()
                .push(format!("{module} is on no rank"));
            continue;
        };
        for imported in imports(&code(&text)) {
            if imported == module {
                continue;
            }
            match rank(&imported) {
                Some(r) if r < own => {}
                Some(r) => wrong
                    .entry(path.display().to_string())
                    .or_default()
                    .push(format!("{module} (rank {own}) imports {imported} (rank {r})")),
                None => wrong
                    .entry(path.display().to_string())
                    .or_default()
                    .push(format!("imports {imported}, which is on no rank")),
            }
        }
    }
    assert!(wrong.is_empty(), "imports against the map of src/lib.rs: {wrong:#?}");
}

#[test]
fn only_the_pipeline_fills_audit_records() {
    // The pipeline is the phase files of `src/proxy/`: its entries and tunnels hand over and never start one.
    let phase = |path: &Path| {
        path.starts_with("proxy") && !path.starts_with("proxy/entry") && !path.starts_with("proxy/tunnel")
    };
    let fillers: Vec<String> = sources()
        .into_iter()
        .filter(|(path, module, text)| !phase(path) && module != "audit" && code(text).contains("Pending::start"))
        .map(|(path, _, _)| path.display().to_string())
        .collect();
    assert!(
        fillers.is_empty(),
        "audit records started outside the pipeline: {fillers:?}"
    );
}

#[test]
fn no_source_file_is_longer_than_a_reader_can_hold() {
    let long: Vec<String> = sources()
        .into_iter()
        .filter(|(_, _, text)| text.lines().count() > MAX_LINES)
        .map(|(path, _, text)| format!("{} ({} lines)", path.display(), text.lines().count()))
        .collect();
    assert!(long.is_empty(), "source files over {MAX_LINES} lines: {long:?}");
}

/// One unit-test layout: a file's tests are a `#[path = "NAME_tests.rs"] mod tests;` beside it (property tests
/// in `NAME_proptests.rs`), never an inline `mod tests { ... }` that makes the file longer than its code.
#[test]
fn unit_tests_live_beside_their_file_not_inside_it() {
    let inline: Vec<String> = sources()
        .into_iter()
        .filter(|(_, _, text)| text.lines().any(|l| l.trim_start().starts_with("mod tests {")))
        .map(|(path, _, _)| path.display().to_string())
        .collect();
    assert!(
        inline.is_empty(),
        "inline test modules (move them to NAME_tests.rs): {inline:?}"
    );
}

#[test]
fn the_import_scanner_sees_what_it_must() {
    assert_eq!(imports("use crate::audit::{self, Kind};"), ["audit"]);
    assert_eq!(imports("x = crate::proxy::run(a); y::crate::not"), ["proxy"]);
    assert_eq!(
        imports("use crate::{admin, logging::init, server};"),
        ["admin", "logging", "server"]
    );
    assert_eq!(
        code("use crate::a; // crate::b\n#[cfg(test)]\nuse crate::c;"),
        "use crate::a; "
    );
    // Code after a gated item is read; the gated item (a line, a block, with more attributes) is not.
    assert_eq!(
        code("#[cfg(test)]\n#[path = \"x_tests.rs\"]\nmod tests;\nuse crate::d;"),
        "use crate::d;"
    );
    assert_eq!(
        code(
            "impl A {\n    #[cfg(test)]\n    fn t() {\n        crate::e::f();\n    }\n    fn g() { crate::h::i(); }\n}"
        ),
        "impl A {\n    fn g() { crate::h::i(); }\n}"
    );
}

/// The maps name only files that are there: every `src/...` and `tests/...` path the README, the book (docs/) and the
/// crate doc mention exists (a map that names a file long gone sends its reader nowhere).
#[test]
fn the_maps_name_only_files_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs = vec![root.join("README.md"), root.join("src/lib.rs")];
    let mut folders = vec![root.join("docs")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() && !path.ends_with("book") {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                docs.push(path);
            }
        }
    }
    let mut missing = Vec::new();
    for doc in docs {
        let text = std::fs::read_to_string(&doc).unwrap();
        for (at, _) in text.match_indices("src/").chain(text.match_indices("tests/")) {
            if at > 0
                && text[..at]
                    .chars()
                    .last()
                    .is_some_and(|c| c.is_alphanumeric() || c == '/' || c == '.')
            {
                continue;
            }
            let path: String = text[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '/' | '.' | '-'))
                .collect();
            let path = path.trim_end_matches(['.', '/']);
            // Only what looks like a file or folder of this repository (not `src/` of another project's example).
            let is_ours = path.ends_with(".rs") || path.ends_with(".py") || path.ends_with(".sh");
            if is_ours && !path.contains("...") && !root.join(path).exists() {
                missing.push(format!("{}: {path}", doc.strip_prefix(root).unwrap().display()));
            }
        }
    }
    missing.sort();
    missing.dedup();
    assert!(
        missing.is_empty(),
        "paths named in the docs that do not exist: {missing:#?}"
    );
}
