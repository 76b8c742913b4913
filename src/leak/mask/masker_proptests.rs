//! Property tests of masking every text encoding of a secret: random secrets, each encoding family written
//! the ways libraries write it (every alignment, line length and mix of escaped and literal characters),
//! fed to a stream in random chunks.
#![expect(clippy::unwrap_used, reason = "tests")]

use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;
use proptest::prelude::*;
use secrecy::SecretString;

use super::Masker;
use crate::leak::mask::forms::joined;

const PLACEHOLDER: &str = "cordon-ph-00112233445566778899aabbccddeeff";

/// A small deterministic generator for the choices inside one case.
struct Dice(u64);

impl Dice {
    fn roll(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        usize::try_from(self.0 % n as u64).unwrap()
    }
    fn coin(&mut self) -> bool {
        self.roll(2) == 0
    }
    fn hex(&mut self, b: u8) -> String {
        let h = format!("{b:02x}");
        if self.coin() { h.to_ascii_uppercase() } else { h }
    }
}

/// Encodings that escape characters one by one: (the secret encoded, what the placeholder becomes).
fn escaped(family: usize, secret: &[u8], d: &mut Dice) -> (Vec<u8>, Vec<u8>) {
    let ph = PLACEHOLDER.as_bytes();
    let each = |d: &mut Dice, f: &mut dyn FnMut(&mut Dice, u8) -> String| -> Vec<u8> {
        secret.iter().map(|&b| f(d, b)).collect::<String>().into_bytes()
    };
    match family {
        // Upper-, lower- or mixed-case.
        0 => (
            secret
                .iter()
                .map(|b| {
                    if d.coin() {
                        b.to_ascii_uppercase()
                    } else {
                        b.to_ascii_lowercase()
                    }
                })
                .collect(),
            ph.to_vec(),
        ),
        // Percent-encoding of some or all bytes, hex digits of either case.
        1 => (
            each(d, &mut |d, b| {
                if d.coin() {
                    format!("%{}", d.hex(b))
                } else {
                    (b as char).to_string()
                }
            }),
            ph.to_vec(),
        ),
        // HTML entities: decimal or hex (`&#x` or `&#X`), leading zeros or not, some characters literal.
        2 => (
            each(d, &mut |d, b| {
                let zeros = "0".repeat(d.roll(4));
                match d.roll(4) {
                    0 => format!("&#{zeros}{b};"),
                    1 => format!("&#x{zeros}{};", d.hex(b)),
                    2 => format!("&#X{zeros}{};", d.hex(b)),
                    _ => (b as char).to_string(),
                }
            }),
            ph.to_vec(),
        ),
        // Quoted-printable: any byte as `=XX`, `=` always, soft line breaks between any two characters.
        3 => {
            let mut out = String::new();
            for (i, &b) in secret.iter().enumerate() {
                if i > 0 && d.roll(4) == 0 {
                    out.push_str(if d.coin() { "=\r\n" } else { "=\n" });
                }
                if b == b'=' || d.coin() {
                    out.push_str(&format!("={:02X}", b));
                } else {
                    out.push(b as char);
                }
            }
            (out.into_bytes(), ph.to_vec())
        }
        // Hex with a separator between bytes, either case.
        4 => {
            let sep = [":", "-", " "][d.roll(3)];
            let upper = d.coin();
            let pairs: Vec<String> = secret
                .iter()
                .map(|b| if upper { format!("{b:02X}") } else { format!("{b:02x}") })
                .collect();
            (pairs.join(sep).into_bytes(), ph.to_vec())
        }
        // One separator between every two characters.
        _ => {
            let sep = b" -.,:;_|/\t\n"[d.roll(11)];
            (joined(secret, sep), joined(ph, sep))
        }
    }
}

/// `text` in lines of `width` characters ending in `eol`.
fn wrapped(text: &str, width: usize, eol: &str) -> Vec<u8> {
    text.as_bytes()
        .chunks(width)
        .map(|l| String::from_utf8(l.to_vec()).unwrap())
        .collect::<Vec<_>>()
        .join(eol)
        .into_bytes()
}

/// Feed `text` to a stream in the chunk sizes given (cycled) and collect what it lets out.
fn streamed(masker: &Arc<Masker>, text: &[u8], sizes: &[usize]) -> Vec<u8> {
    let mut stream = masker.stream();
    let (mut out, mut at, mut k) = (Vec::new(), 0, 0);
    while at < text.len() {
        let n = sizes[k % sizes.len()].min(text.len() - at);
        out.extend_from_slice(&stream.push(Bytes::copy_from_slice(&text[at..at + n])));
        at += n;
        k += 1;
    }
    out.extend_from_slice(&stream.finish());
    out
}

fn masker(secret: &str) -> Arc<Masker> {
    Arc::new(Masker::new(&[(SecretString::from(secret.to_string()), PLACEHOLDER.to_string())]).unwrap())
}

/// Whether `hay` holds any `n`-byte window of `needle` (ASCII case ignored).
fn holds_window(hay: &[u8], needle: &[u8], n: usize) -> bool {
    needle
        .windows(n)
        .any(|w| hay.windows(n).any(|h| h.eq_ignore_ascii_case(w)))
}

/// `secret` in a JSON string as an encoder, or a hostile upstream, may write it: each character as it is (where
/// JSON lets it be), as `\uXXXX` with hex digits of either case (a surrogate pair for one past the BMP), or
/// with its short escape (`\"`, `\\`, `\/`).
fn json_escaped(secret: &str, d: &mut Dice) -> String {
    let mut out = String::new();
    for c in secret.chars() {
        let short = match c {
            '"' => Some("\\\""),
            '\\' => Some("\\\\"),
            '/' => Some("\\/"),
            _ => None,
        };
        match d.roll(3) {
            0 => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let h = format!("{u:04x}");
                    out.push_str("\\u");
                    out.push_str(&if d.coin() { h.to_ascii_uppercase() } else { h });
                }
            }
            1 if short.is_some() => out.push_str(short.unwrap_or_default()),
            _ if c == '"' || c == '\\' => out.push_str(short.unwrap_or_default()),
            _ => out.push(c),
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    /// A secret of any characters (quotes, backslashes, slashes, accents, emoji) in a JSON document, every
    /// character written as it is or escaped in any mix, fed whole or in chunks that cut escapes anywhere,
    /// plain or as a server-sent event: the document comes out as exactly that JSON with the placeholder where
    /// the secret was, and still parses.
    #[test]
    fn json_escaped_secrets_are_replaced_and_the_document_stays_json(
        secret in "[A-Za-z0-9_./+~\\- \"\\\\éß€😀]{10,28}", seed in 1u64.., sse in any::<bool>(),
        sizes in prop::collection::vec(1usize..40, 1..6)
    ) {
        prop_assume!(secret.len() >= crate::leak::forms::MIN_FORM);
        let mut d = Dice(seed);
        let doc = |s: &str| format!("{{\"note\": \"echo: {s}\", \"n\": [1, \"\\u0041\\n\"]}}");
        let frame = |j: String| if sse { format!("event: m\ndata: {j}\n\n") } else { j };
        let body = frame(doc(&json_escaped(&secret, &mut d)));
        let want = frame(doc(PLACEHOLDER));
        let m = masker(&secret);
        let (whole, parts) = (m.mask(body.as_bytes()).unwrap(), streamed(&m, body.as_bytes(), &sizes));
        prop_assert_eq!(String::from_utf8_lossy(&whole), want.as_str(), "{}", body);
        prop_assert_eq!(String::from_utf8_lossy(&parts), want.as_str(), "{}", body);
        let masked = String::from_utf8(whole).unwrap();
        let json = masked.trim_start_matches("event: m\ndata: ").trim_end();
        prop_assert_eq!(&serde_json::from_str::<serde_json::Value>(json).unwrap()["note"], &format!("echo: {PLACEHOLDER}"));
    }

    /// A secret escaped character by character inside ordinary text comes out as exactly that text with
    /// the placeholder (written the same way) where the secret was, whatever the chunks.
    #[test]
    fn escaped_secrets_are_replaced_exactly(
        secret in "[A-Za-z0-9_./+~-]{16,40}", family in 0usize..6, seed in 1u64.., sizes in prop::collection::vec(1usize..64, 1..6)
    ) {
        let mut d = Dice(seed);
        let (encoded, replaced) = escaped(family, secret.as_bytes(), &mut d);
        let body = [&b"{\"note\": \"echo: "[..], &encoded, b"\"}\n"].concat();
        let want = [&b"{\"note\": \"echo: "[..], &replaced, b"\"}\n"].concat();
        let m = masker(&secret);
        let (whole, parts) = (m.mask(&body).unwrap(), streamed(&m, &body, &sizes));
        prop_assert_eq!(String::from_utf8_lossy(&whole), String::from_utf8_lossy(&want));
        prop_assert_eq!(String::from_utf8_lossy(&parts), String::from_utf8_lossy(&want));
    }

    /// UTF-16 of a text holding the secret, either byte order, with or without a byte order mark: the
    /// placeholder replaces it in UTF-16 of the same order, and the text stays UTF-16.
    #[test]
    fn utf16_secrets_are_replaced_in_utf16(
        secret in "[A-Za-z0-9_./+~-]{16,40}", le in any::<bool>(), bom in any::<bool>(), sizes in prop::collection::vec(1usize..64, 1..6)
    ) {
        let enc = |t: &str| -> Vec<u8> {
            let units = t.encode_utf16();
            let mut out: Vec<u8> = if bom { if le { vec![0xFF, 0xFE] } else { vec![0xFE, 0xFF] } } else { Vec::new() };
            out.extend(units.flat_map(|u| if le { u.to_le_bytes() } else { u.to_be_bytes() }));
            out
        };
        let m = masker(&secret);
        let body = enc(&format!("value: {secret}!"));
        let want = enc(&format!("value: {PLACEHOLDER}!"));
        prop_assert_eq!(&m.mask(&body).unwrap(), &want);
        prop_assert_eq!(&streamed(&m, &body, &sizes), &want);
    }

    /// base64 (both alphabets) and base32 of a text holding the secret at every alignment, wrapped at any
    /// line length with CRLF or LF (MIME's 76 and PEM's 64 among them), padded or not: no part of the
    /// secret's encoding reaches the sandbox, and the stream agrees with masking the whole.
    #[test]
    fn wrapped_base64_and_base32_are_masked(
        secret in "[A-Za-z0-9_./+~-]{16,40}", before in "[a-z:]{0,9}", after in "[a-z]{0,9}", kind in 0usize..4,
        width in prop_oneof![Just(64usize), Just(76usize), 1usize..100], crlf in any::<bool>(), sizes in prop::collection::vec(1usize..200, 1..6)
    ) {
        let text = format!("{before}{secret}{after}");
        let encoded = match kind {
            0 => base64::engine::general_purpose::STANDARD.encode(&text),
            1 => base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&text),
            2 => data_encoding::BASE32.encode(text.as_bytes()),
            _ => data_encoding::BASE32_NOPAD.encode(text.as_bytes()),
        };
        let body = [&b"--b\r\nContent-Transfer-Encoding: base64\r\n\r\n"[..], &wrapped(&encoded, width, if crlf { "\r\n" } else { "\n" }), b"\r\n--b--\r\n"].concat();
        let m = masker(&secret);
        let whole = m.mask(&body).unwrap();
        prop_assert_eq!(&streamed(&m, &body, &sizes), &whole);
        // The characters of the encoding that carry the secret's bits alone: none may come back.
        let bits = if kind < 2 { 6 } else { 5 };
        let (from, to) = (8 * before.len(), 8 * (before.len() + secret.len()));
        let core = &encoded.as_bytes()[from.div_ceil(bits)..to / bits];
        let flat: Vec<u8> = whole.iter().copied().filter(|b| *b != b'\r' && *b != b'\n').collect();
        prop_assert!(!holds_window(&flat, core, 12), "{}", String::from_utf8_lossy(&whole));
        prop_assert!(String::from_utf8_lossy(&whole).contains(PLACEHOLDER));
    }

    /// Ordinary text, HTML with entities, quoted-printable and base64 of other data: nothing is masked.
    #[test]
    fn text_without_the_secret_passes_unchanged(secret in "[A-Za-z0-9_./+~-]{16,40}", words in prop::collection::vec("[a-zA-Z0-9]{1,12}", 1..60), seed in 1u64..) {
        let mut d = Dice(seed);
        let mut body = String::new();
        for w in &words {
            body.push_str(w);
            body.push_str(["  ", "\n", "\r\n", " &amp; ", "&#x27;", "%20", "=3D", "=\r\n", ", "][d.roll(9)]);
        }
        body.push_str(&base64::engine::general_purpose::STANDARD.encode(body.clone()));
        let m = masker(&secret);
        prop_assert!(m.mask(body.as_bytes()).is_none(), "{}", body);
        prop_assert_eq!(streamed(&m, body.as_bytes(), &[7, 1, 300]), body.into_bytes());
    }
}

/// A secret ending in `\`, escaped in a JSON string (`\\` or `\u005c`) right before the closing quote: the
/// placeholder takes the secret's place and the quote stays (found by the property test above, 1 run in 4).
#[test]
fn a_secret_ending_in_a_backslash_leaves_the_closing_quote() {
    for (secret, body) in [
        (
            "A-+\\a_😀_0\\",
            "{\"note\": \"echo: A-+\\\\a_😀_0\\\\\", \"n\": [1, \"\\u0041\\n\"]}",
        ),
        ("abcdefghij\\", "{\"note\": \"echo: abcdefghij\\\\\", \"n\": 1}"),
        ("abcdefghij\\", "{\"note\": \"echo: abcdefghij\\u005c\", \"n\": 1}"),
        ("\\\"+ßAß😀- \\", "{\"note\": \"echo: \\\\\\\"+ßAß😀- \\\\\", \"n\": 1}"),
    ] {
        let out = masker(secret).mask(body.as_bytes()).unwrap();
        let out = String::from_utf8(out.to_vec()).unwrap();
        let v: Result<serde_json::Value, _> = serde_json::from_str(&out);
        assert!(v.is_ok(), "{body} -> {out}: not JSON");
        let v = v.unwrap();
        assert_eq!(v["note"], format!("echo: {PLACEHOLDER}"), "{body} -> {out}");
    }
}
