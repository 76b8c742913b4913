//! Every standard text encoding of an echoed secret comes back masked, through the `cordon` binary with
//! curl: the leaky upstream's `/encoded?e=FAMILY` answers with the secret cordon injected written as a
//! server or a common library writes it (case changed, percent-encoding of every or some bytes, HTML
//! entities, quoted-printable, separated hex, UTF-16, separated characters, wrapped base64 and base32), and
//! ordinary text full of escapes that hold no secret passes byte for byte.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};

use crate::secrets_rig::*;

/// Families whose encoding of the secret is replaced by the placeholder written the same way (exactly
/// predictable answers).
const EXACT: &[&str] = &[
    "upper",
    "lower",
    "pct-all",
    "pct-all-lower",
    "pct-some",
    "html-dec",
    "html-hex",
    "html-X-zeros",
    "html-some",
    "qp",
    "qp-all",
    "hex-colon",
    "hex-dash-upper",
    "hex-space",
    "sep-space",
    "sep-colon",
    "sep-dash",
    "utf16le-bom",
    "utf16be",
];

/// Families of whole-text encodings wrapped in lines: (name, alphabet bits per character).
const WRAPPED: &[(&str, usize)] = &[("b64-mime", 6), ("b64url-pem", 6), ("b32", 5), ("b32-lower-nopad", 5)];

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
fn aligned(secret: &str) -> String {
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
fn plain() -> Vec<u8> {
    let prose = "Tom &amp; Jerry&#39;s caf&eacute; &lt;b&gt; 100% = 3D =\r\nsoft %41%42%43 a=b&c=d\r\n";
    let blob = wrap(&STANDARD.encode(prose.repeat(20)), 76, "\r\n");
    format!(
        "{}{blob}\r\n{}",
        prose.repeat(50),
        quoted_printable(&prose.repeat(5), false, 0)
    )
    .into_bytes()
}

/// The characters of a wrapped encoding that carry only the secret's bits, at each alignment.
fn cores(family: &str, bits: usize, secret: &str) -> Vec<Vec<u8>> {
    let unwrapped: Vec<u8> = encoded(family, secret)
        .into_iter()
        .filter(|b| !b"\r\n".contains(b))
        .collect();
    let text = aligned(secret);
    let start = if family == "b64url-pem" {
        "-----BEGIN DATA-----".len()
    } else {
        0
    };
    (0..5)
        .map(|a| {
            let before: usize = (0..a).map(|k| k + secret.len() + 1).sum::<usize>() + a;
            let (from, to) = (8 * before, 8 * (before + secret.len()));
            assert!(text.len() * 8 >= to);
            unwrapped[start + from.div_ceil(bits)..start + to / bits].to_vec()
        })
        .collect()
}

fn get(rig: &Rig, family: &str) -> Vec<u8> {
    let mut c = rig.curl();
    c.args(["-sS", "--fail", &rig.url("leaky.test", &format!("/encoded?e={family}"))]);
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{family}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[tokio::test(flavor = "multi_thread")]
async fn every_text_encoding_of_an_echoed_secret_comes_back_masked() {
    let rig = Rig::start().await;
    let ph = rig.placeholder_of("bearer");
    for family in EXACT {
        let got = get(&rig, family);
        // The placeholder written the way the secret was, where the secret was; nothing else changed.
        let replaced = match *family {
            "sep-space" | "sep-colon" | "sep-dash" | "utf16le-bom" | "utf16be" => encoded(family, &ph),
            _ => [&b"<p>token: "[..], ph.as_bytes(), b"</p>\r\n"].concat(),
        };
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&replaced),
            "{family}: sent {}",
            String::from_utf8_lossy(&encoded(family, BEARER))
        );
    }
    for (family, bits) in WRAPPED {
        let got = get(&rig, family);
        let flat: Vec<u8> = got.iter().copied().filter(|b| !b"\r\n".contains(b)).collect();
        let text = String::from_utf8_lossy(&got);
        assert_eq!(text.matches(&ph).count(), 5, "{family}: {text}");
        for core in cores(family, *bits, BEARER) {
            let leaked = core
                .windows(10)
                .find(|w| flat.windows(10).any(|f| f.eq_ignore_ascii_case(w)));
            assert!(
                leaked.is_none(),
                "{family}: {:?} came back in {text}",
                leaked.map(String::from_utf8_lossy)
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn text_full_of_escapes_without_a_secret_passes_byte_for_byte() {
    let rig = Rig::start().await;
    assert_eq!(get(&rig, "plain"), plain());
}
