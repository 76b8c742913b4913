//! The data plane's shape holds (issue #55 item 1): `src/proxy/mod.rs` runs one ordered list of phases, each one
//! file of `src/proxy/phase/` with the same signature (a preview's three included), and every slot of the
//! per-request context (`Ctx`, `src/proxy/ctx.rs`) is written by exactly one phase (the exchange's ending by the
//! last phase of each kind: respond, open, answer, visit),
//! and consumed (`.take()`) by at most one. Read from the source, so a new phase or slot is checked as it lands.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fields of `pub(super) struct Ctx { ... }`.
fn ctx_fields(src: &str) -> Vec<String> {
    let start = src
        .find("pub(super) struct Ctx {")
        .expect("struct Ctx in src/proxy/ctx.rs");
    let body = &src[start..];
    let body = &body[..body.find("\n}\n").expect("end of Ctx")];
    body.lines()
        .filter_map(|l| l.trim().strip_prefix("pub(super) "))
        .filter_map(|l| l.split_once(':').map(|(name, _)| name.trim().to_owned()))
        .collect()
}

/// Each phase file (by module name) and its text, without its `#[cfg(test)]` tail.
fn phases(root: &Path) -> BTreeMap<String, String> {
    let dir = root.join("src/proxy/phase");
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("src/proxy/phase") {
        let path = entry.expect("entry").path();
        let name = path.file_stem().and_then(|s| s.to_str()).expect("name").to_owned();
        if name == "mod" || name.ends_with("_tests") {
            continue;
        }
        out.insert(name, read(&path));
    }
    out
}

/// Whether `text` assigns `ctx.<field>` (not `==`, and not a field of the field).
fn assigns(text: &str, field: &str) -> bool {
    let needle = format!("ctx.{field} =");
    text.match_indices(&needle)
        .any(|(i, _)| !text[i + needle.len()..].starts_with('='))
}

/// `flow` runs each of `order` (`phase::run`), in that order.
fn in_order(flow: &str, order: &[&str]) {
    let at: Vec<usize> = order
        .iter()
        .map(|p| {
            flow.find(&format!("{p}(ctx, fx)"))
                .unwrap_or_else(|| panic!("{p} not in flow"))
        })
        .collect();
    assert!(
        at.windows(2).all(|w| w[0] < w[1]),
        "src/proxy/mod.rs runs the phases out of order: {order:?}"
    );
}

#[test]
fn every_phase_is_one_file_with_one_signature_run_in_the_documented_order() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let phases = phases(root);
    let flow = read(&root.join("src/proxy/mod.rs"));
    let mut missing = Vec::new();
    for (name, text) in &phases {
        if name == "record" {
            // The record phase takes the context by value: it ends the exchange.
            assert!(
                text.contains(
                    "pub(crate) fn run(mut ctx: Ctx, fx: &impl Effects, ended: Result<(), ProxyError>) -> Outcome"
                ),
                "src/proxy/phase/record.rs: the record phase's signature changed"
            );
            assert!(
                flow.contains("end::run(ctx, fx, ended)"),
                "src/proxy/mod.rs: the record phase must always run"
            );
            continue;
        }
        let signature = text
            .contains("pub(crate) async fn run(ctx: &mut Ctx, fx: &impl Effects) -> Result<(), ProxyError>")
            || text.contains("pub(crate) async fn run(ctx: &mut Ctx, _fx: &impl Effects) -> Result<(), ProxyError>");
        assert!(
            signature,
            "src/proxy/phase/{name}.rs: a phase is `async fn run(&mut Ctx, &impl Effects)`"
        );
        let alias = if name == "protocol" { "judge" } else { name.as_str() };
        if !flow.contains(&format!("{alias}::run(ctx, fx).await")) {
            missing.push(name.clone());
        }
    }
    assert!(missing.is_empty(), "phases src/proxy/mod.rs never runs: {missing:?}");
    // The order the crate doc and the architecture page give.
    let order = [
        "identify::run",
        "admit::run",
        "target::run",
        "hygiene::run",
        "decide::run",
        "shape::run",
        "judge::run",
        "approve::run",
        "credentials::run",
        "send::run",
        "respond::run",
    ];
    in_order(&flow, &order);
    // A preview's own three (a person reaching a sandbox's dev server), in their order.
    in_order(&flow, &["visitor::run", "exposed::run", "visit::run"]);
    println!("{} phases, each one file, run in order", phases.len());
}

#[test]
fn every_slot_of_the_context_is_written_by_one_phase() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ctx = read(&root.join("src/proxy/ctx.rs"));
    let fields = ctx_fields(&ctx);
    assert!(fields.len() > 10, "Ctx's fields were not found: {fields:?}");
    let phases = phases(root);
    // What the entry gives, set when the exchange starts: no phase writes them.
    let given: BTreeSet<&str> = [
        "generation",
        "kind",
        "client",
        "original_dst",
        "conn",
        "claim",
        "parsed",
        "intent",
        "audit",
    ]
    .into_iter()
    .collect();
    // The exchange's ending: the last phase of each kind writes it.
    let last: BTreeSet<&str> = ["respond", "open", "answer", "visit"].into_iter().collect();
    let mut problems = Vec::new();
    let mut table = Vec::new();
    for field in &fields {
        let writers: BTreeSet<&str> = phases
            .iter()
            .filter(|(_, text)| assigns(text, field))
            .map(|(name, _)| name.as_str())
            .collect();
        let takers: BTreeSet<&str> = phases
            .iter()
            .filter(|(_, text)| text.contains(&format!("ctx.{field}.take()")))
            .map(|(name, _)| name.as_str())
            .collect();
        if takers.len() > 1 {
            problems.push(format!("ctx.{field} is consumed by {takers:?}: one phase at most"));
        }
        if given.contains(field.as_str()) {
            if !writers.is_empty() {
                problems.push(format!("ctx.{field} is the entry's, but {writers:?} write it"));
            }
        } else if field == "ending" {
            if writers != last {
                problems.push(format!(
                    "ctx.ending is written by {writers:?}, not the last phase of each kind {last:?}"
                ));
            }
        } else if writers.len() != 1 {
            problems.push(format!(
                "ctx.{field} is written by {writers:?}: exactly one phase must write it"
            ));
        }
        table.push(format!("{field}: written by {writers:?}, consumed by {takers:?}"));
    }
    // Nothing outside the phases writes a slot.
    for entry in std::fs::read_dir(root.join("src/proxy")).expect("src/proxy") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("ctx.rs") {
            let text = read(&path);
            for field in &fields {
                if assigns(&text, field) {
                    problems.push(format!("{} writes ctx.{field} outside the phases", path.display()));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    println!("{}", table.join("\n"));
}
