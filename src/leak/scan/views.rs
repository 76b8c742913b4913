//! The readings of a text that a receiver might decode: what the exfiltration scan looks through besides
//! the raw bytes. A placeholder or a secret hidden by encoding is found in one of them.
//!
//! Decoders, each applied where its text could be one, up to two deep (JSON escapes inside a
//! percent-encoded field, say): percent-decoding (repeated: `%2563` is `%63` is `c`), `+` as space, JSON
//! string escapes (`\u002d`, `\/`), and the values of a form or query string joined together (a placeholder
//! split over two fields). Base64 and hex are not decoded here: the scanner looks for their forms of what it
//! seeks directly, which costs nothing on text that holds none.

use std::borrow::Cow;

use bytes::Bytes;

/// How many decoders deep a reading goes.
const DEPTH: usize = 2;

/// The text itself first, then every reading decoding makes of it.
pub(crate) fn views(text: &[u8]) -> Vec<Cow<'_, [u8]>> {
    let mut out = vec![Cow::Borrowed(text)];
    if !decodable(text) {
        // Most header values and paths: nothing to decode, nothing to copy.
        return out;
    }
    let mut frontier = vec![text.to_vec()];
    for _ in 0..DEPTH {
        let mut next = Vec::new();
        for t in &frontier {
            for decoded in decodings(t) {
                if decoded.as_slice() != text && !out.iter().any(|v| v.as_ref() == decoded.as_slice()) {
                    next.push(decoded.clone());
                    out.push(Cow::Owned(decoded));
                }
            }
        }
        frontier = next;
    }
    out
}

/// A text and its readings ([`views`]), made once and read by whoever looks at the text: the exfiltration scan
/// and, for a request body, the token-request reader.
pub(crate) struct Readings {
    /// The text.
    text: Bytes,
    /// Every reading decoding makes of it.
    decoded: Vec<Vec<u8>>,
}

impl Readings {
    /// The readings of `text`.
    pub(crate) fn of(text: Bytes) -> Readings {
        let decoded = views(&text).into_iter().skip(1).map(Cow::into_owned).collect();
        Readings { text, decoded }
    }

    /// The text itself.
    pub(crate) fn text(&self) -> &[u8] {
        &self.text
    }

    /// The text, then every reading decoding makes of it (as [`views`] gives them).
    pub(crate) fn all(&self) -> Vec<Cow<'_, [u8]>> {
        std::iter::once(&self.text[..])
            .chain(self.decoded.iter().map(Vec::as_slice))
            .map(Cow::Borrowed)
            .collect()
    }
}

/// Whether any decoder applies to `text` (each looks for its own sign first).
fn decodable(text: &[u8]) -> bool {
    let (mut sign, mut eq, mut amp) = (false, false, false);
    for &b in text {
        match b {
            b'%' | b'+' | b'\\' => sign = true,
            b'=' => eq = true,
            b'&' => amp = true,
            _ => {}
        }
    }
    sign || (eq && amp)
}

/// One decoder's step over `text`, for each decoder that applies.
fn decodings(text: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    if text.contains(&b'%') || text.contains(&b'+') {
        let decoded = percent_decode(text);
        if decoded != text {
            out.push(decoded);
        }
    }
    if text.contains(&b'\\') {
        let unescaped = json_unescape(text);
        if unescaped != text {
            out.push(unescaped);
        }
    }
    if text.contains(&b'=') && text.contains(&b'&') {
        out.push(form_values_joined(text));
    }
    out
}

/// `%XX` decoded (invalid escapes kept as they are), and `+` as a space (before decoding, so `%2B` stays `+`).
fn percent_decode(text: &[u8]) -> Vec<u8> {
    let spaced: Vec<u8> = text.iter().map(|&b| if b == b'+' { b' ' } else { b }).collect();
    percent_encoding::percent_decode(&spaced).collect()
}

/// JSON string escapes undone (`\uXXXX` of any character in either case, surrogate pairs, `\/`, `\n` and the
/// rest), by the grammar echo masking reads too ([`crate::leak::json_escape`]); anything that is not a whole
/// escape is kept as it is.
fn json_unescape(text: &[u8]) -> Vec<u8> {
    crate::leak::json_escape::unescape(text)
}

/// The values of `a=1&b=2` (each percent-decoded) joined with nothing between them.
fn form_values_joined(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for pair in text.split(|&b| b == b'&') {
        let value = pair.splitn(2, |&b| b == b'=').nth(1).unwrap_or(pair);
        out.extend_from_slice(&percent_decode(value));
    }
    out
}

#[cfg(test)]
#[path = "views_tests.rs"]
mod tests;
