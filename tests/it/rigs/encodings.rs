//! The text encodings of a secret as a server or a common library writes it (escapes, base64 and base32
//! families, quoted-printable, ...): what the leaky upstream's `/encoded?e=FAMILY` answers.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};

/// `text` in lines of `width` characters ending in `eol`.
fn wrap(text: &str, width: usize, eol: &str) -> String {
    let lines: Vec<&str> = (0..text.len())
        .step_by(width)
        .map(|i| &text[i..(i + width).min(text.len())])
        .collect();
    lines.join(eol)
}

/// Quoted-printable as an encoder writes it: `=XX` for `=` and (with `all`) every byte, soft line breaks
/// before 76 columns, `first` columns already used on the first line.
fn quoted_printable(text: &str, all: bool, first: usize) -> String {
    let (mut out, mut col) = (String::new(), first);
    for b in text.bytes() {
        let piece = if all || b == b'=' || !(33..=126).contains(&b) {
            format!("={b:02X}")
        } else {
            (b as char).to_string()
        };
        if col + piece.len() > 75 {
            out.push_str("=\r\n");
            col = 0;
        }
        col += piece.len();
        out.push_str(&piece);
    }
    out
}

/// The secret (or the placeholder) written by the escaping families.
pub(crate) fn escaped(family: &str, s: &str) -> Vec<u8> {
    let each = |f: &dyn Fn(usize, u8) -> String| s.bytes().enumerate().map(|(i, b)| f(i, b)).collect::<String>();
    let hex: Vec<String> = s.bytes().map(|b| format!("{b:02x}")).collect();
    let utf16 = |le: bool| -> Vec<u8> {
        s.encode_utf16()
            .flat_map(|u| if le { u.to_le_bytes() } else { u.to_be_bytes() })
            .collect()
    };
    let text = match family {
        "upper" => s.to_ascii_uppercase(),
        "lower" => s.to_ascii_lowercase(),
        "pct-all" => each(&|_, b| format!("%{b:02X}")),
        "pct-all-lower" => each(&|_, b| format!("%{b:02x}")),
        "pct-some" => each(&|i, b| {
            if i % 3 == 1 {
                format!("%{b:02X}")
            } else {
                (b as char).to_string()
            }
        }),
        "html-dec" => each(&|_, b| format!("&#{b};")),
        "html-hex" => each(&|_, b| format!("&#x{b:x};")),
        "html-X-zeros" => each(&|_, b| format!("&#X{b:04X};")),
        // OWASP-style attribute escaping: alphanumerics as they are, everything else as a reference.
        "html-some" => each(&|_, b| match b {
            b'/' => "&sol;".into(),
            b'+' => "&#43;".into(),
            b if b.is_ascii_alphanumeric() => (b as char).to_string(),
            b => format!("&#x{b:02x};"),
        }),
        "qp" => quoted_printable(s, false, 60),
        "qp-all" => quoted_printable(s, true, 60),
        "hex-colon" => hex.join(":"),
        "hex-dash-upper" => hex.join("-").to_uppercase(),
        "hex-space" => hex.join(" "),
        "sep-space" | "sep-colon" | "sep-dash" => {
            let sep = match family {
                "sep-space" => " ",
                "sep-colon" => ":",
                _ => "-",
            };
            s.chars().map(String::from).collect::<Vec<_>>().join(sep)
        }
        "utf16le-bom" => return [&[0xFF, 0xFE][..], &utf16(true)].concat(),
        "utf16be" => return utf16(false),
        other => panic!("no family {other}"),
    };
    text.into_bytes()
}

/// A text holding the secret at each of the alignments it can have in base64 (3) or base32 (5).
pub(crate) fn aligned(secret: &str) -> String {
    (0..5).map(|a| format!("{}{secret};", &"user:"[..a])).collect()
}

/// What the upstream answers to `/encoded?e=family` when it was sent `secret`.
pub(crate) fn encoded(family: &str, secret: &str) -> Vec<u8> {
    match family {
        "b64-mime" => wrap(&STANDARD.encode(aligned(secret)), 76, "\r\n").into_bytes(),
        "b64url-pem" => format!(
            "-----BEGIN DATA-----\n{}\n-----END DATA-----\n",
            wrap(&URL_SAFE.encode(aligned(secret)), 64, "\n")
        )
        .into_bytes(),
        "b32" => wrap(&data_encoding::BASE32.encode(aligned(secret).as_bytes()), 76, "\r\n").into_bytes(),
        "b32-lower-nopad" => wrap(
            &data_encoding::BASE32_NOPAD
                .encode(aligned(secret).as_bytes())
                .to_lowercase(),
            60,
            "\n",
        )
        .into_bytes(),
        "plain" => plain(),
        "utf16le-bom" | "utf16be" => {
            let le = family == "utf16le-bom";
            let mut out: Vec<u8> = if le { vec![0xFF, 0xFE] } else { Vec::new() };
            let text = format!("<p>token: {secret}</p>\r\n");
            out.extend(
                text.encode_utf16()
                    .flat_map(|u| if le { u.to_le_bytes() } else { u.to_be_bytes() }),
            );
            out
        }
        _ => [&b"<p>token: "[..], &escaped(family, secret), b"</p>\r\n"].concat(),
    }
}

/// Ordinary text full of what masking reads as encodings (entities, escapes, soft breaks, wrapped base64),
/// none of it a secret.
pub(crate) fn plain() -> Vec<u8> {
    let prose = "Tom &amp; Jerry&#39;s caf&eacute; &lt;b&gt; 100% = 3D =\r\nsoft %41%42%43 a=b&c=d\r\n";
    let blob = wrap(&STANDARD.encode(prose.repeat(20)), 76, "\r\n");
    format!(
        "{}{blob}\r\n{}",
        prose.repeat(50),
        quoted_printable(&prose.repeat(5), false, 0)
    )
    .into_bytes()
}

/// The JSON string escaping families of `/json?e=FAMILY`: how a JSON encoder (or one that escapes more than
/// it must) writes the secret inside a string.
pub(crate) const JSON_FAMILIES: &[&str] = &["json-one", "json-all", "json-all-upper", "json-mixed", "json-slash"];

/// `s` inside a JSON string (without the quotes), written by `family`: one character as `\u002d`, every
/// character as `\uXXXX` (lower- or upper-case hex), every other one escaped with `/` as `\/`, or as a
/// JSON encoder writes it with `/` as `\/`.
pub(crate) fn json_escaped(family: &str, s: &str) -> String {
    let hex = |c: char, upper: bool| {
        let digits = format!("{:04x}", c as u32);
        format!("\\u{}", if upper { digits.to_ascii_uppercase() } else { digits })
    };
    let quoted = serde_json::to_string(s).unwrap();
    let plain = &quoted[1..quoted.len() - 1];
    match family {
        "json-one" => plain.replacen('-', "\\u002d", 1),
        "json-all" => s.chars().map(|c| hex(c, false)).collect(),
        "json-all-upper" => s.chars().map(|c| hex(c, true)).collect(),
        "json-mixed" => s
            .chars()
            .enumerate()
            .map(|(i, c)| match (i % 2, c) {
                (_, '/') => "\\/".to_string(),
                (0, c) => hex(c, i % 4 == 0),
                (_, c) => c.to_string(),
            })
            .collect(),
        "json-slash" => plain.replace('/', "\\/"),
        other => panic!("no family {other}"),
    }
}

/// The document `/json` answers: `s` (already escaped) in two strings of a JSON object.
pub(crate) fn json_doc(s: &str) -> String {
    format!("{{\"echo\": \"{s}\", \"list\": [1, \"a {s} b\"], \"note\": \"caf\\u00e9 \\\"q\\\"\"}}")
}
