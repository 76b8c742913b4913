//! The forms masking looks for in a response, beyond the ones the exfiltration scan shares
//! ([`crate::leak::forms`]): what servers and common libraries emit when they re-encode a value they were sent.
//!
//! - base32 (RFC 4648) at each of the five alignments the secret can have in a longer encoded text, keeping
//!   only the characters that depend on the secret alone (as [`crate::leak::forms`] does for base64);
//! - hex with a separator between bytes (`:`, `-` or a space: MAC-address style, `xxd`, `od`);
//! - UTF-16, little- and big-endian (the byte order mark, when there is one, only precedes the text);
//! - the secret with one separator between every character (a space, `-`, `.`, `,`, `:`, `;`, `_`, `|`,
//!   `/`, a tab, a line break).
//!
//! Matching ignores ASCII case, so the secret upper- or lower-cased, hex and percent-encoding in either case
//! and lower-case base32 need no form of their own. Encodings that mix escaped and literal characters, or
//! break lines anywhere (quoted-printable, HTML entities, percent-encoding of some bytes, wrapped base64 and
//! base32), are read by decoding the text instead ([`crate::leak::mask::view`]): listing them would take one form
//! per subset of characters.

use crate::leak::forms::{MIN_FORM, forms};

/// How the placeholder replacing a form is written, so that the text around it keeps its shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// As it is.
    Plain,
    /// With this byte between every two characters (a UTF-16 form of an ASCII secret is this with `0`:
    /// the byte before its first character and after its last stay in the text).
    Joined(u8),
}

/// The separators a secret may have between every two characters.
const SEPARATORS: &[u8] = b" -.,:;_|/\t\n\0";

/// The separators hex may have between bytes.
const HEX_SEPARATORS: &[u8] = b":- ";

/// Every form of `secret` masking looks for, each with how its replacement is written, without duplicates
/// (ASCII case ignored), longest first; nothing for a secret shorter than [`MIN_FORM`].
pub(crate) fn mask_forms(secret: &[u8]) -> Vec<(Vec<u8>, Style)> {
    let mut out: Vec<(Vec<u8>, Style)> = Vec::new();
    if secret.len() < MIN_FORM {
        return out;
    }
    let mut add = |form: Vec<u8>, style: Style| {
        if form.len() >= MIN_FORM && !out.iter().any(|(f, _)| f.eq_ignore_ascii_case(&form)) {
            out.push((form, style));
        }
    };
    for form in forms(secret) {
        add(form, Style::Plain);
    }
    for align in 0..5 {
        add(base32_core(secret, align), Style::Plain);
    }
    let hex = hex::encode(secret).into_bytes();
    for &sep in HEX_SEPARATORS {
        add(hex.chunks(2).collect::<Vec<_>>().join(&sep), Style::Plain);
    }
    let (le, be) = utf16(secret);
    add(le, Style::Joined(0));
    add(be, Style::Joined(0));
    for &sep in SEPARATORS {
        add(joined(secret, sep), Style::Joined(sep));
    }
    out.sort_by_key(|(f, _)| std::cmp::Reverse(f.len()));
    out
}

/// `bytes` with `sep` between every two of them.
pub(crate) fn joined(bytes: &[u8], sep: u8) -> Vec<u8> {
    joined_with(bytes, &[sep])
}

/// `bytes` with the bytes `sep` between every two of them.
pub(crate) fn joined_with(bytes: &[u8], sep: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() * (1 + sep.len()));
    for (i, &b) in bytes.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(sep);
        }
        out.push(b);
    }
    out
}

/// The base32 characters that depend only on `secret` when it follows `align` other bytes (0 to 4): character
/// `j` covers bits `5j..5j+5` of the stream, the secret bits `8·align .. 8·(align + len)`.
fn base32_core(secret: &[u8], align: usize) -> Vec<u8> {
    let mut padded = vec![0u8; align];
    padded.extend_from_slice(secret);
    let encoded = data_encoding::BASE32_NOPAD.encode(&padded).into_bytes();
    let first = (8 * align).div_ceil(5);
    let end = (8 * (align + secret.len())) / 5;
    encoded.get(first..end).map(<[u8]>::to_vec).unwrap_or_default()
}

/// The secret (read as UTF-8) in UTF-16 little- and big-endian, without the zero byte that an ASCII first
/// (big-endian) or last (little-endian) character has on its outer side: what is left is found whatever
/// the byte order, and the two are the same form for an ASCII secret.
fn utf16(secret: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let text = String::from_utf8_lossy(secret);
    let units: Vec<u16> = text.encode_utf16().collect();
    let mut le: Vec<u8> = units.iter().flat_map(|u| u.to_le_bytes()).collect();
    let mut be: Vec<u8> = units.iter().flat_map(|u| u.to_be_bytes()).collect();
    if le.last() == Some(&0) {
        le.pop();
    }
    if be.first() == Some(&0) {
        be.remove(0);
    }
    (le, be)
}

#[cfg(test)]
#[path = "forms_tests.rs"]
mod tests;
