//! How a held request is shown to the person deciding: escaped so that nothing in it can hide or reorder
//! what they read.

use serde::Serializer;

/// The longest excerpt kept, in characters.
pub(crate) const MAX_EXCERPT: usize = 256;

/// An excerpt of a request body for a [`HeldRequest`](super::HeldRequest): its first [`MAX_EXCERPT`] characters (invalid UTF-8 replaced),
/// as they are: [`visible`] escapes them when shown.
pub(crate) fn excerpt(body: &[u8]) -> String {
    let head = &body[..body.len().min(MAX_EXCERPT * 4)];
    String::from_utf8_lossy(head).chars().take(MAX_EXCERPT).collect()
}

/// `text` with nothing that could mislead a person reading it: a backslash becomes `\\`, line breaks and tabs
/// `\n` `\r` `\t`, and every other control character, bidirectional control (U+061C, U+200E-U+200F,
/// U+202A-U+202E, U+2066-U+2069) and invisible character (U+200B-U+200D, U+2060-U+2065, U+FEFF) `\u{XXXX}`.
/// What was escaped stays readable, and nothing reorders or hides the text around it.
pub(crate) fn visible(text: &str) -> String {
    escaped(text, true)
}

/// [`visible`] without escaping backslashes: for text that may hold escapes made by [`visible`] already (what
/// the CLI prints of an API answer), so that they read as they are and nothing raw gets through.
pub(crate) fn unmisleading(text: &str) -> String {
    escaped(text, false)
}

fn escaped(text: &str, backslash: bool) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' if backslash => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // SECURITY: a right-to-left override or an invisible character would show the approver a URL or
            // body other than the one they allow.
            c if c.is_control() || misleading(c) => {
                let _ = write!(out, "\\u{{{:04x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// Characters that reorder or hide text without being control characters.
fn misleading(c: char) -> bool {
    matches!(
        c,
        '\u{61C}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}'
    )
}

pub(super) fn shown<S: Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&visible(text))
}

/// Text of several lines (pretty-printed JSON) shown line by line: the line breaks stay, and nothing in a line
/// can mislead ([`unmisleading`]: JSON text writes a backslash of its strings as `\\` already).
pub(super) fn shown_lines<S: Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
    let lines: Vec<String> = text.split('\n').map(unmisleading).collect();
    s.serialize_str(&lines.join("\n"))
}

pub(super) fn shown_query<S: Serializer>(query: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    match query {
        Some(q) => shown(q, s),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
#[path = "shown_tests.rs"]
mod tests;
