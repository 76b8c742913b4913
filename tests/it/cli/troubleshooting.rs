//! The book's Troubleshooting page (docs/src/troubleshooting.md, its codes made from src/reason/codes.rs) names
//! only commands there are: every `cordon ...` it writes, in its introduction and in each code's "What to do", is
//! run with `--help` through the binary, and every flag written after it is one that command takes.

use std::collections::{BTreeMap, BTreeSet};

use crate::rigs::process::cordon;

const PAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/src/troubleshooting.md");

/// The commands the page names, each (as its path of subcommands) with the flags written after it: a code span
/// `cordon sandbox renew ID --ttl 2h` is the path `sandbox renew` with `--ttl`, and a span `--idle` later in the
/// same paragraph is a flag of the last command named there.
fn named_commands(page: &str) -> BTreeMap<Vec<String>, BTreeSet<String>> {
    let mut named: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    for paragraph in page.split("\n\n") {
        assert_eq!(
            paragraph.matches('`').count() % 2,
            0,
            "a code span left open: {paragraph}"
        );
        let mut last: Option<Vec<String>> = None;
        for span in paragraph.split('`').skip(1).step_by(2) {
            if let Some(rest) = span.strip_prefix("cordon ") {
                let words: Vec<&str> = rest.split_whitespace().collect();
                let path: Vec<String> = words
                    .iter()
                    .take_while(|w| !w.starts_with('-') && w.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
                    .map(|w| w.to_string())
                    .collect();
                assert!(!path.is_empty(), "`{span}` names no command");
                let flags = named.entry(path.clone()).or_default();
                flags.extend(words.iter().filter(|w| w.starts_with("--")).map(|w| w.to_string()));
                last = Some(path);
            } else if span.starts_with("--") {
                let flag = span.split_whitespace().next().unwrap().to_string();
                let path = last
                    .clone()
                    .unwrap_or_else(|| panic!("`{span}` follows no command: {paragraph}"));
                named.entry(path).or_default().insert(flag);
            }
        }
    }
    named
}

#[test]
fn every_command_the_troubleshooting_page_names_is_one() {
    let page = std::fs::read_to_string(PAGE).unwrap();
    let named = named_commands(&page);
    // The page names explain, check, reasons, the sandbox, ca, approvals and jail commands at least.
    assert!(named.len() >= 10, "{named:?}");
    for (path, flags) in &named {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let (code, help, err) = cordon(&args);
        let command = format!("cordon {}", path.join(" "));
        assert_eq!(code, 0, "`{command} --help`: {err}");
        // A word taken for a subcommand but read as an argument would still print the parent's help.
        assert!(
            help.contains(&format!("Usage: {command}")),
            "`{command}` is not a command:\n{help}"
        );
        let taken: BTreeSet<&str> = help
            .split(|c: char| c.is_whitespace() || matches!(c, ',' | '[' | ']' | '<' | '>' | '='))
            .filter(|w| w.starts_with("--"))
            .collect();
        for flag in flags {
            assert!(
                taken.contains(flag.as_str()),
                "`{command}` takes no {flag}; it takes {taken:?}"
            );
        }
    }
}

/// The parser itself: paths, flags after a command, and a flag after a later command in the same paragraph.
#[test]
fn the_page_reader_sees_commands_and_their_flags() {
    let named = named_commands(
        "Run `cordon sandbox renew ID --ttl 2h` or `cordon jail` with `--memory`.\n\nThen `cordon reasons CODE`.",
    );
    let want: BTreeMap<Vec<String>, BTreeSet<String>> = [
        (vec!["sandbox", "renew"], vec!["--ttl"]),
        (vec!["jail"], vec!["--memory"]),
        (vec!["reasons"], vec![]),
    ]
    .into_iter()
    .map(|(p, f)| {
        (
            p.into_iter().map(String::from).collect(),
            f.into_iter().map(String::from).collect(),
        )
    })
    .collect();
    assert_eq!(named, want);
}
