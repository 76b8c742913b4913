#![expect(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::collections::HashSet;

use super::*;

/// The book's page of reason codes; between these lines it holds [`page`].
const PAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/src/troubleshooting.md");
const START: &str =
    "<!-- reasons: generated from src/reason/codes.rs; CORDON_BLESS=1 cargo test --lib reason rewrites it -->\n";
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

/// Every reason says what to do, in a sentence or two on one line.
#[test]
fn every_reason_says_what_to_do() {
    for r in Reason::ALL {
        let remedy = r.remedy();
        assert!(
            remedy.len() > 20 && remedy.ends_with('.') && !remedy.contains('\n'),
            "{}: {remedy:?}",
            r.code()
        );
        assert!(
            remedy.starts_with(|c: char| c.is_ascii_uppercase() || c == '`'),
            "{}: {remedy:?}",
            r.code()
        );
        assert_eq!(
            remedy.matches('`').count() % 2,
            0,
            "{}: unbalanced `: {remedy:?}",
            r.code()
        );
    }
}

/// Each reason is in exactly one family, and the families hold them in the registry's order.
#[test]
fn the_families_hold_every_reason_once_in_order() {
    let flat: Vec<Reason> = Reason::FAMILIES.iter().flat_map(|(_, rs)| rs.iter().copied()).collect();
    assert_eq!(flat, Reason::ALL);
    assert!(
        Reason::FAMILIES
            .iter()
            .all(|(title, rs)| !title.is_empty() && !rs.is_empty())
    );
}

/// How the page shows an answer.
fn shown(answer: Answer) -> String {
    match answer {
        Answer::Status(s) => format!("**{s}**"),
        Answer::InProtocol => {
            "**200** with a refusal in the protocol's own words (a JSON-RPC error, a GraphQL error)".into()
        }
        Answer::Close(c) => format!("WebSocket close code **{c}**"),
        Answer::Dns(rcode) => format!("DNS **{rcode}**"),
        Answer::Closed => "**connection closed**".into(),
        Answer::Record => "**record only**".into(),
    }
}

/// What the sandbox reads of a refusal it can read over HTTP (see the book's "When an agent is refused"): whose
/// side it is on, whether asking a person can help, and the hint; nothing for records and answers for people.
fn for_the_agent(r: Reason) -> String {
    if r.answer().http_status().is_none() || r.whose() == crate::reason::Whose::Record {
        return String::new();
    }
    format!(
        "\n**The agent reads:** `whose` `{}`, `ask` `{}`: {}\n",
        r.whose().as_str(),
        r.ask(),
        r.hint()
    )
}

/// The page's generated part: the table of `cordon reasons` with each code linked to its section, then a section
/// per family and one per code (mdBook gives it the code itself as its id), with its answer, meaning and what to
/// do.
fn page() -> String {
    let mut out = String::from("## Every code\n\n");
    let table = Reason::table();
    let mut rows = table.lines();
    for header in rows.by_ref().take(2) {
        out.push_str(header);
        out.push('\n');
    }
    for (row, r) in rows.zip(Reason::ALL) {
        let plain = format!("`{}`", r.code());
        let linked = format!("[`{0}`](#{0})", r.code());
        out.push_str(&row.replacen(&plain, &linked, 1));
        out.push('\n');
    }
    for (family, reasons) in Reason::FAMILIES {
        out.push_str(&format!("\n## {family}\n"));
        for r in *reasons {
            out.push_str(&format!(
                "\n### `{}`\n\n{}: {}.\n\n**What to do:** {}\n{}",
                r.code(),
                shown(r.answer()),
                r.meaning(),
                r.remedy(),
                for_the_agent(*r)
            ));
        }
    }
    out.push('\n');
    out
}

/// The page's generated part is the registry's: a code added, dropped or reworded here fails until the page says
/// the same (`CORDON_BLESS=1` writes it).
#[test]
fn the_troubleshooting_page_is_the_registry() {
    let text = std::fs::read_to_string(PAGE).unwrap();
    let at = text
        .find(START)
        .expect("docs/src/troubleshooting.md lost its reasons marker")
        + START.len();
    let end = at
        + text[at..]
            .find(END)
            .expect("docs/src/troubleshooting.md lost its reasons end marker");
    let want = page();
    if text[at..end] != want && std::env::var_os("CORDON_BLESS").is_some() {
        std::fs::write(PAGE, format!("{}{want}{}", &text[..at], &text[end..])).unwrap();
        return;
    }
    assert!(
        text[at..end] == want,
        "docs/src/troubleshooting.md differs from src/reason/codes.rs; run CORDON_BLESS=1 cargo test --lib reason"
    );
}

/// mdBook's id of a heading (0.5): its text without inline markup, lower-cased, alphanumerics, `_` and `-` kept,
/// whitespace turned into `-`, the rest dropped.
fn heading_id(text: &str) -> String {
    text.chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c.to_ascii_lowercase())
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// Every code's section has the code as its id (`troubleshooting.md#no_rule`), no two headings of the page share
/// an id (mdBook would number the second), and every link within the page goes to a heading.
#[test]
fn each_code_is_an_anchor_of_the_page() {
    let text = std::fs::read_to_string(PAGE).unwrap();
    let mut ids = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            ids.push(heading_id(line.trim_start_matches('#').trim()));
        }
    }
    let mut seen = HashSet::new();
    for id in &ids {
        assert!(seen.insert(id.as_str()), "two headings of the page have the id {id}");
    }
    for r in Reason::ALL {
        assert!(seen.contains(r.code()), "no heading has the id {}", r.code());
        assert!(text.contains(&format!("\n### `{}`\n", r.code())), "{}", r.code());
    }
    for (at, _) in text.match_indices("](#") {
        let anchor: String = text[at + 3..].chars().take_while(|c| *c != ')').collect();
        assert!(
            seen.contains(anchor.as_str()),
            "a link to #{anchor}, which no heading has"
        );
    }
}

/// Literals that spell a code but belong to another family: the admin API's error codes (its own table, in
/// docs/openapi.yaml), a key name of AWS credentials files, and the `side` of a failure (`internal`).
const NOT_REASONS: &[(&str, &str)] = &[
    ("src/admin/response.rs", "body_too_large"),
    ("src/error/side.rs", "internal"),
    ("src/admin/response.rs", "method_not_allowed"),
    ("src/admin/previews.rs", "preview_failed"),
    ("src/leak/mask/key_mask.rs", "aws_session_token"),
];

/// No reason code is written as a string anywhere but in the registry: each step names a [`Reason`].
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
        if name == "src/reason.rs" || name.starts_with("src/reason/") || name.ends_with("_tests.rs") {
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
        "reason codes written outside src/reason/codes.rs: {spelt:#?}"
    );
}
