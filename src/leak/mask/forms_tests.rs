#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

const SECRET: &[u8] = b"sk-live/51Hx+Qz?a=b&c\"d";

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.len() >= needle.len() && hay.windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle))
}

fn any_form(forms: &[(Vec<u8>, Style)], text: &[u8]) -> bool {
    forms.iter().any(|(f, _)| contains(text, f))
}

#[test]
fn every_base32_alignment_of_the_secret_in_any_surroundings_contains_a_form() {
    let forms = mask_forms(SECRET);
    for before in ["", "x", "xy", "xyz", "wxyz", "{\"k\":1}"] {
        for after in ["", "!", "!!", "tail", "12345"] {
            let text = [before.as_bytes(), SECRET, after.as_bytes()].concat();
            for encoding in [&data_encoding::BASE32, &data_encoding::BASE32_NOPAD] {
                let encoded = encoding.encode(&text);
                assert!(
                    any_form(&forms, encoded.as_bytes()),
                    "{before:?}+secret+{after:?} as {encoded}"
                );
                // Lower-cased base32 (some libraries write it so) is found too: matching ignores case.
                assert!(any_form(&forms, encoded.to_ascii_lowercase().as_bytes()));
            }
        }
    }
}

#[test]
fn separated_hex_utf16_and_separated_characters_are_forms() {
    let forms = mask_forms(SECRET);
    let hex = hex::encode(SECRET);
    let pairs: Vec<&str> = (0..hex.len()).step_by(2).map(|i| &hex[i..i + 2]).collect();
    for sep in [":", "-", " "] {
        assert!(any_form(&forms, pairs.join(sep).as_bytes()), "{sep:?}");
        assert!(
            any_form(&forms, pairs.join(sep).to_ascii_uppercase().as_bytes()),
            "{sep:?}"
        );
    }
    let text = std::str::from_utf8(SECRET).unwrap();
    let le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
    for (bom, body) in [(&[0xFF, 0xFE][..], le), (&[0xFE, 0xFF][..], be)] {
        assert!(any_form(&forms, &body));
        assert!(any_form(&forms, &[bom, &body].concat()));
    }
    for sep in SEPARATORS {
        assert!(any_form(&forms, &joined(SECRET, *sep)), "{sep:?}");
    }
    // The upper-cased secret needs no form of its own: matching ignores case.
    assert!(any_form(&forms, &SECRET.to_ascii_uppercase()));
}

#[test]
fn a_non_ascii_secret_has_utf16_forms_for_both_byte_orders() {
    let secret = "pässwörd-ünïcode-€";
    let forms = mask_forms(secret.as_bytes());
    let le: Vec<u8> = secret.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let be: Vec<u8> = secret.encode_utf16().flat_map(u16::to_be_bytes).collect();
    assert!(any_form(&forms, &le) && any_form(&forms, &be));
}

#[test]
fn forms_are_unique_whatever_the_case_longest_first_and_never_too_short() {
    let forms = mask_forms(b"abcdefghijklmnop");
    for (i, (a, _)) in forms.iter().enumerate() {
        assert!(forms[i + 1..].iter().all(|(b, _)| !a.eq_ignore_ascii_case(b)));
    }
    assert!(forms.windows(2).all(|w| w[0].0.len() >= w[1].0.len()));
    assert!(forms.iter().all(|(f, _)| f.len() >= MIN_FORM));
    assert!(mask_forms(b"abc").is_empty());
    // Separated forms say how their replacement is written.
    assert!(forms.contains(&(joined(b"abcdefghijklmnop", b':'), Style::Joined(b':'))));
}
