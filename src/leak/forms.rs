//! The forms a secret takes when something re-encodes it: what masking looks for in a response besides the
//! raw bytes, and what the exfiltration scan looks for in a request.
//!
//! - base64, standard and URL-safe alphabets, at each of the three alignments the secret can have inside a
//!   longer encoded text: only the characters that depend on the secret's bytes alone are kept, so the form
//!   is found whatever bytes surround the secret;
//! - percent-encoding (RFC 3986: everything but the unreserved characters as `%XX`), with upper- and
//!   lower-case hex digits;
//! - JSON string escaping, with and without `\/` for `/`, and with every non-ASCII or control character as
//!   `\uXXXX`;
//! - hex, lower- and upper-case.
//!
//! A form shorter than [`MIN_FORM`] bytes is left out: it would match ordinary text.

use std::collections::BTreeSet;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};

/// The most patterns for which the SIMD prefilter pays off, in the automata of the scan and of masking that search for the forms (measured: 6 patterns 9 GiB/s with it; 60 patterns
/// 190 MiB/s with it, several times that without).
pub(crate) const PREFILTER_MAX: usize = 16;

/// The shortest form worth looking for.
pub(crate) const MIN_FORM: usize = 8;

/// The raw secret and every encoded form of it, without duplicates, longest first; nothing for a secret
/// shorter than [`MIN_FORM`] (it would be found in ordinary text: such a secret is neither masked nor
/// scanned for).
pub(crate) fn forms(secret: &[u8]) -> Vec<Vec<u8>> {
    if secret.len() < MIN_FORM {
        return Vec::new();
    }
    let mut out: BTreeSet<Vec<u8>> = BTreeSet::new();
    let mut add = |form: Vec<u8>| {
        if form.len() >= MIN_FORM {
            out.insert(form);
        }
    };
    add(secret.to_vec());
    for engine in [&STANDARD, &URL_SAFE] {
        for align in 0..3 {
            add(base64_core(engine, secret, align));
        }
    }
    add(percent(secret, false));
    add(percent(secret, true));
    let json = json_escaped(secret);
    add(json.replace('/', "\\/").into_bytes());
    add(json.into_bytes());
    add(json_u_escaped(secret).into_bytes());
    add(hex::encode(secret).into_bytes());
    add(hex::encode_upper(secret).into_bytes());
    let mut all: Vec<Vec<u8>> = out.into_iter().collect();
    all.sort_by_key(|f| std::cmp::Reverse(f.len()));
    all
}

/// The base64 characters that depend only on `secret`, when it follows `align` other bytes (0 to 2) in the
/// encoded text: character `j` covers bits `6j..6j+6` of the stream, and the secret holds bits
/// `8·align .. 8·(align + len)`.
fn base64_core(engine: &base64::engine::GeneralPurpose, secret: &[u8], align: usize) -> Vec<u8> {
    let mut padded = vec![0u8; align];
    padded.extend_from_slice(secret);
    let encoded = engine.encode(&padded).into_bytes();
    let first = (8 * align).div_ceil(6);
    let end = (8 * (align + secret.len())) / 6;
    encoded.get(first..end).map(<[u8]>::to_vec).unwrap_or_default()
}

/// Every byte but RFC 3986's unreserved characters (letters, digits, `-._~`).
const RESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// RFC 3986 percent-encoding: every byte but the unreserved characters as `%XX`, the hex digits upper-case
/// (as the crate writes them) or `lower`-case.
fn percent(secret: &[u8], lower: bool) -> Vec<u8> {
    let mut out = percent_encoding::percent_encode(secret, RESERVED)
        .collect::<String>()
        .into_bytes();
    if lower {
        // Only the two digits after each `%` change: the secret's own letters, left unescaped, keep their case.
        let mut i = 0;
        while i < out.len() {
            if out[i] == b'%' {
                out[i + 1..i + 3].make_ascii_lowercase();
                i += 3;
            } else {
                i += 1;
            }
        }
    }
    out
}

/// The secret inside a JSON string, as a JSON encoder writes it (without the quotes).
fn json_escaped(secret: &[u8]) -> String {
    let text = String::from_utf8_lossy(secret);
    let quoted = serde_json::to_string(&text).unwrap_or_default();
    quoted
        .strip_prefix('"')
        .and_then(|q| q.strip_suffix('"'))
        .unwrap_or_default()
        .to_string()
}

/// The secret inside a JSON string with everything but printable ASCII written as `\uXXXX` (what encoders
/// that escape non-ASCII, and many that escape HTML-sensitive characters, produce).
fn json_u_escaped(secret: &[u8]) -> String {
    let text = String::from_utf8_lossy(secret);
    let mut out = String::with_capacity(secret.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            ' '..='~' if !"<>&'".contains(c) => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "forms_tests.rs"]
mod tests;
