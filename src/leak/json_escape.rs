//! JSON string escapes, read one at a time: the one grammar that both the exfiltration scan's readings
//! ([`crate::leak::scan::views`]) and echo masking's reading ([`crate::leak::mask::view`]) decode, so that what one
//! sees through the other does too.
//!
//! An escape is `\` and one of `" \ / b f n r t` (RFC 8259 §7), or `\u` and four hex digits of either case,
//! two of them making one character when they are a surrogate pair (`\uD83D\uDE00`). A lone surrogate, or a
//! `\` before anything else, is no escape: the `\` stands for itself, as the text around it does.

/// What the bytes starting with a `\` are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Escape {
    /// The first `len` bytes stand for this character.
    Char { len: usize, c: char },
    /// The start of an escape that the end of the bytes cuts short (only when more bytes may follow).
    Cut,
    /// Not an escape: the `\` is itself.
    No,
}

/// The escape at the start of `rest`, which starts with `\`; `at_end` when no bytes follow `rest`.
pub(crate) fn escape(rest: &[u8], at_end: bool) -> Escape {
    let cut = if at_end { Escape::No } else { Escape::Cut };
    let simple = match rest.get(1) {
        None => return cut,
        Some(b'"') => '"',
        Some(b'\\') => '\\',
        Some(b'/') => '/',
        Some(b'b') => '\u{8}',
        Some(b'f') => '\u{c}',
        Some(b'n') => '\n',
        Some(b'r') => '\r',
        Some(b't') => '\t',
        Some(b'u') => return unicode(rest, cut),
        Some(_) => return Escape::No,
    };
    Escape::Char { len: 2, c: simple }
}

/// `\uXXXX`, or a surrogate pair of two, at the start of `rest`; `cut` is what an escape cut short is.
fn unicode(rest: &[u8], cut: Escape) -> Escape {
    let first = match unit(rest) {
        EscapeUnit::Value(v) => v,
        EscapeUnit::Short => return cut,
        EscapeUnit::Not => return Escape::No,
    };
    if (0xDC00..0xE000).contains(&first) {
        return Escape::No;
    }
    if !(0xD800..0xDC00).contains(&first) {
        return char::from_u32(first).map_or(Escape::No, |c| Escape::Char { len: 6, c });
    }
    match unit(&rest[6..]) {
        EscapeUnit::Value(second) if (0xDC00..0xE000).contains(&second) => {
            char::from_u32(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))
                .map_or(Escape::No, |c| Escape::Char { len: 12, c })
        }
        // The low half may still come: wait for it (the whole pair is one character).
        EscapeUnit::Short => cut,
        _ => Escape::No,
    }
}

/// One `\uXXXX` at the start of some bytes.
enum EscapeUnit {
    Value(u32),
    /// What there is could still become one.
    Short,
    Not,
}

fn unit(t: &[u8]) -> EscapeUnit {
    let shape = b"\\u";
    for (i, &b) in t.iter().take(6).enumerate() {
        let fits = if i < 2 { b == shape[i] } else { b.is_ascii_hexdigit() };
        if !fits {
            return EscapeUnit::Not;
        }
    }
    let Some(digits) = t.get(2..6) else {
        return EscapeUnit::Short;
    };
    EscapeUnit::Value(
        digits
            .iter()
            .fold(0, |acc, &d| acc * 16 + (d as char).to_digit(16).unwrap_or(0)),
    )
}

/// `text` with every JSON escape undone; what is not a whole escape is kept as it is.
pub(crate) fn unescape(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i] == b'\\'
            && let Escape::Char { len, c } = escape(&text[i..], true)
        {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            i += len;
            continue;
        }
        out.push(text[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
#[path = "json_escape_tests.rs"]
mod tests;
