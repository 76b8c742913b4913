#![expect(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::collections::HashSet;

use super::*;

/// Between these lines the README holds [`Reason::table`].
const START: &str =
    "<!-- reasons: generated from src/reason.rs; CORDON_BLESS=1 cargo test --lib reason rewrites it -->\n";
const END: &str = "<!-- reasons: end -->\n";

#[test]
fn every_code_is_one_reason_and_reads_as_one() {
    let mut seen = HashSet::new();
    for r in Reason::ALL {
        assert!(seen.insert(r.code()), "{} is given twice", r.code());
        assert!(
            r.code()
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
            "{} is not snake_case",
            r.code()
        );
        assert!(!r.meaning().is_empty() && !r.meaning().contains('|'), "{:?}", r);
    }
}

/// The README's table is the registry's: a code added, dropped or reworded here fails until the README says the
/// same (`CORDON_BLESS=1` writes it).
#[test]
fn the_readme_table_is_the_registry() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    let readme = std::fs::read_to_string(path).unwrap();
    let at = readme.find(START).expect("the README lost its reasons marker") + START.len();
    let end = at + readme[at..].find(END).expect("the README lost its reasons end marker");
    let want = Reason::table();
    if readme[at..end] != want && std::env::var_os("CORDON_BLESS").is_some() {
        std::fs::write(path, format!("{}{want}{}", &readme[..at], &readme[end..])).unwrap();
        return;
    }
    assert!(
        readme[at..end] == want,
        "README.md's reason table differs from src/reason.rs; run CORDON_BLESS=1 cargo test --lib reason"
    );
}

/// Literals that spell a code but belong to another family: the admin API's error codes (its own table, in
/// docs/openapi.yaml), a key name of AWS credentials files, and the `side` of a failure (`internal`).
const NOT_REASONS: &[(&str, &str)] = &[
    ("src/admin/response.rs", "body_too_large"),
    ("src/error/side.rs", "internal"),
    ("src/admin/response.rs", "method_not_allowed"),
    ("src/admin/previews.rs", "preview_failed"),
    ("src/leak/key_mask.rs", "aws_session_token"),
];

/// No reason code is written as a string anywhere but here: each step names a [`Reason`].
#[test]
fn no_reason_is_spelt_outside_the_registry() {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    walk(&root.join("src"), &mut files);
    let codes: HashSet<&str> = Reason::ALL.iter().map(|r| r.code()).collect();
    let mut spelt = Vec::new();
    for path in files {
        let name = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        if name == "src/reason.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let text = text.split("#[cfg(test)]\nmod tests {").next().unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for literal in line.split('"').skip(1).step_by(2) {
                if codes.contains(literal) && !NOT_REASONS.contains(&(name.as_str(), literal)) {
                    spelt.push(format!("{name}:{}: \"{literal}\"", n + 1));
                }
            }
        }
    }
    assert!(
        spelt.is_empty(),
        "reason codes written outside src/reason.rs: {spelt:#?}"
    );
}
