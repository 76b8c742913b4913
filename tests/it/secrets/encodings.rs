//! Every standard text encoding of an echoed secret comes back masked, through the `cordon` binary with
//! curl: the leaky upstream's `/encoded?e=FAMILY` answers with the secret cordon injected written as a
//! server or a common library writes it (case changed, percent-encoding of every or some bytes, HTML
//! entities, quoted-printable, separated hex, UTF-16, separated characters, wrapped base64 and base32), and
//! ordinary text full of escapes that hold no secret passes byte for byte.

use crate::rigs::encodings::{aligned, encoded, plain};
use crate::rigs::secrets::*;
use crate::rigs::wait::Within;

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
    let out = c.timed_output().unwrap();
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
