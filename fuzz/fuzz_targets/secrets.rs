//! Secret scanning (`src/leak/scan/detect.rs`) and masking (`src/leak/mask/masker.rs`, `src/leak/mask/body.rs`)
//! on arbitrary text built from arbitrary secrets (1 to 3, 8 to 32 bytes each), pieces of them, their encodings
//! and other bytes, differentially against a naive reference.
//!
//! The reference re-derives the forms `src/leak/forms.rs` documents (the secret; standard and URL-safe
//! base64 at the three alignments, keeping the characters that depend on the secret alone; percent-encoding
//! with upper- and lower-case digits; JSON string escaping with and without `\/`, and with `\uXXXX`; hex in
//! both cases; forms under 8 bytes left out), and looks for each with `windows()` in each reading of the text
//! that cordon's own decoders make (`views`, used as is: percent-decoding, JSON unescaping, form values).
//!
//! Checks that nothing panics, and that:
//! - the scan reports only credentials one of whose secret's forms occurs, ASCII case-insensitively, in a
//!   reading of the text (a form that is also a form of the placeholder prefix is no secret's);
//! - it reports every credential that owns all the occurrences in some run of overlapping occurrences (of
//!   any secret's forms and the placeholder prefix's) in a reading. Not more: the scan matches leftmost-longest,
//!   without overlaps, so a secret whose every occurrence overlaps another credential's secret or the prefix
//!   goes unreported (`abcdefgh12` and `12345678xyz` in `abcdefgh12345678xyz`: a known gap, see
//!   `docs/src/fuzzing.md`);
//! - masking the text in one piece and masking it as a body arriving in arbitrary frames give the same bytes;
//! - the masked text holds no form of any secret (placeholders are made of a byte no form contains).
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::sync::Arc;

use cordon::fuzzing::{Detector, Masker, detector, mask_streamed, mask_whole, masker, scan, text_views};
use libfuzzer_sys::fuzz_target;

/// The placeholder prefix (`src/placeholder.rs`).
const PREFIX: &str = "cordon-ph-";

/// One piece of the text.
enum Piece {
    Bytes(Vec<u8>),
    Secret(u8),
    Form(u8, u8),
    Upper(u8),
    Head(u8, u8),
    Tail(u8, u8),
    Prefix,
    /// Not text: the body's frames are cut here.
    Cut,
}

/// The input, read front to back with `arbitrary::Unstructured` so that seeds are easy to write: one byte
/// for the number of secrets (1 to 3); each secret as one length byte (8 to 32) and its bytes (read as
/// UTF-8, lossily); then pieces, each a kind byte and its arguments (`Bytes`: a length byte, up to 64, and
/// the bytes; the others: a secret index and a form index or length, as the kind needs).
struct Input {
    secrets: Vec<String>,
    pieces: Vec<Piece>,
}

impl Input {
    fn read(data: &[u8]) -> Input {
        let mut u = Unstructured::new(data);
        let mut byte = || u8::arbitrary(&mut u).unwrap_or(0);
        let count = 1 + usize::from(byte()) % 3;
        let mut secrets = Vec::new();
        for _ in 0..count {
            let len = 8 + usize::from(byte()) % 25;
            let bytes: Vec<u8> = (0..len).map(|_| byte()).collect();
            secrets.push(String::from_utf8_lossy(&bytes).into_owned());
        }
        let mut pieces = Vec::new();
        while !u.is_empty() {
            let mut byte = || u8::arbitrary(&mut u).unwrap_or(0);
            pieces.push(match byte() % 8 {
                0 => {
                    let len = usize::from(byte()) % 65;
                    Piece::Bytes((0..len).map(|_| byte()).collect())
                }
                1 => Piece::Secret(byte()),
                2 => Piece::Form(byte(), byte()),
                3 => Piece::Upper(byte()),
                4 => Piece::Head(byte(), byte()),
                5 => Piece::Tail(byte(), byte()),
                6 => Piece::Prefix,
                _ => Piece::Cut,
            });
        }
        Input { secrets, pieces }
    }
}

/// The forms `forms.rs` documents, longest first, without duplicates.
fn forms(secret: &[u8]) -> Vec<Vec<u8>> {
    if secret.len() < 8 {
        return Vec::new();
    }
    let mut out: Vec<Vec<u8>> = vec![secret.to_vec()];
    for engine in [&STANDARD, &URL_SAFE] {
        for align in 0..3 {
            let mut padded = vec![0u8; align];
            padded.extend_from_slice(secret);
            let encoded = engine.encode(&padded).into_bytes();
            // Character j covers bits 6j..6j+6; the secret holds bits 8·align..8·(align + len).
            out.push(encoded[(8 * align).div_ceil(6)..8 * (align + secret.len()) / 6].to_vec());
        }
    }
    for digits in [b"0123456789ABCDEF", b"0123456789abcdef"] {
        let mut pct = Vec::new();
        for &b in secret {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                pct.push(b);
            } else {
                pct.extend_from_slice(&[b'%', digits[usize::from(b >> 4)], digits[usize::from(b & 15)]]);
            }
        }
        out.push(pct);
    }
    let text = String::from_utf8_lossy(secret);
    let quoted = serde_json::to_string(&text).unwrap();
    let json = &quoted[1..quoted.len() - 1];
    out.push(json.as_bytes().to_vec());
    out.push(json.replace('/', "\\/").into_bytes());
    let mut u = String::new();
    for c in text.chars() {
        match c {
            '"' => u.push_str("\\\""),
            '\\' => u.push_str("\\\\"),
            ' '..='~' if !"<>&'".contains(c) => u.push(c),
            c => {
                for unit in c.encode_utf16(&mut [0u16; 2]) {
                    u.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push(u.into_bytes());
    out.push(hex::encode(secret).into_bytes());
    out.push(hex::encode_upper(secret).into_bytes());
    out.retain(|f| f.len() >= 8);
    out.sort_by_key(|f| std::cmp::Reverse(f.len()));
    out.dedup();
    out
}

fn contains(hay: &[u8], needle: &[u8], ignore_case: bool) -> bool {
    hay.windows(needle.len()).any(|w| {
        if ignore_case {
            w.eq_ignore_ascii_case(needle)
        } else {
            w == needle
        }
    })
}

/// The automata for one set of secrets: the detector, and the masker whose placeholders are made of one
/// printable byte that no form contains (none when there is no such byte).
type Automata = (Detector, Option<Arc<Masker>>);

/// How many sets of secrets keep their automata.
const CACHED: usize = 64;

thread_local! {
    /// The automata for the sets of secrets seen last: building them is most of the cost of one run, and
    /// libFuzzer often mutates only the text of a corpus entry.
    static CACHE: RefCell<(HashMap<Vec<String>, Rc<Automata>>, VecDeque<Vec<String>>)> = RefCell::default();
}

/// The automata for `secrets`, built or reused.
fn automata(secrets: &[String]) -> Rc<Automata> {
    CACHE.with_borrow_mut(|(built, order)| {
        if let Some(a) = built.get(secrets) {
            return a.clone();
        }
        let named: Vec<(String, String)> = secrets
            .iter()
            .enumerate()
            .map(|(i, s)| (format!("c{i}"), s.clone()))
            .collect();
        let detector = detector(&named).expect("the detector builds");
        let used: Vec<u8> = secrets.iter().flat_map(|s| forms(s.as_bytes())).flatten().collect();
        let masking = (b'!'..=b'~').find(|b| !used.contains(b)).map(|mark| {
            let pairs: Vec<(String, String)> = secrets
                .iter()
                .enumerate()
                .map(|(i, s)| (s.clone(), char::from(mark).to_string().repeat(i + 1)))
                .collect();
            masker(&pairs).expect("something to mask")
        });
        let a = Rc::new((detector, masking));
        if order.len() == CACHED
            && let Some(old) = order.pop_front()
        {
            built.remove(&old);
        }
        order.push_back(secrets.to_vec());
        built.insert(secrets.to_vec(), a.clone());
        a
    })
}

fuzz_target!(|data: &[u8]| {
    let input = Input::read(data);
    let secrets: Vec<String> = input.secrets.into_iter().filter(|s| s.len() >= 8).collect();
    if secrets.is_empty() {
        return;
    }
    let all_forms: Vec<Vec<Vec<u8>>> = secrets.iter().map(|s| forms(s.as_bytes())).collect();
    let pick = |i: u8| &secrets[usize::from(i) % secrets.len()];
    let mut text = Vec::new();
    let mut cuts = Vec::new();
    for piece in input.pieces.iter().take(32) {
        match piece {
            Piece::Cut => cuts.push(text.len()),
            Piece::Bytes(b) => text.extend_from_slice(b),
            Piece::Secret(i) => text.extend_from_slice(pick(*i).as_bytes()),
            Piece::Form(i, f) => {
                let forms = &all_forms[usize::from(*i) % secrets.len()];
                text.extend_from_slice(&forms[usize::from(*f) % forms.len()]);
            }
            Piece::Upper(i) => text.extend_from_slice(pick(*i).to_ascii_uppercase().as_bytes()),
            Piece::Head(i, n) => text.extend_from_slice(&pick(*i).as_bytes()[..usize::from(*n) % pick(*i).len()]),
            Piece::Tail(i, n) => text.extend_from_slice(&pick(*i).as_bytes()[usize::from(*n) % pick(*i).len()..]),
            Piece::Prefix => text.extend_from_slice(PREFIX.as_bytes()),
        }
    }

    // The scan, against the reference.
    let automata = automata(&secrets);
    let (detector, masking) = &*automata;
    let found = scan(detector, &text);
    let mut reported: Vec<String> = found.secrets.iter().flatten().cloned().collect();
    reported.sort();
    reported.dedup();
    let prefix_forms = forms(PREFIX.as_bytes());
    let mut patterns: Vec<(Option<usize>, &[u8])> = prefix_forms.iter().map(|f| (None, &f[..])).collect();
    for (i, forms) in all_forms.iter().enumerate() {
        for f in forms
            .iter()
            .filter(|f| !prefix_forms.iter().any(|p| p.eq_ignore_ascii_case(f)))
        {
            patterns.push((Some(i), f));
        }
    }
    let (mut may, mut must) = (Vec::new(), Vec::new());
    for view in text_views(&text) {
        let mut found: Vec<(usize, usize, Option<usize>)> = Vec::new();
        for &(owner, form) in &patterns {
            for start in (0..view.len().saturating_sub(form.len() - 1))
                .filter(|&s| view[s..s + form.len()].eq_ignore_ascii_case(form))
            {
                found.push((start, start + form.len(), owner));
            }
        }
        found.sort();
        may.extend(found.iter().filter_map(|o| o.2));
        // Runs of overlapping occurrences: the scanner enters each at its start, so one whose occurrences are
        // all one credential's is found.
        let mut run: Vec<Option<usize>> = Vec::new();
        let mut run_end = 0;
        for (start, end, owner) in found.into_iter().chain([(usize::MAX, usize::MAX, None)]) {
            if start >= run_end && !run.is_empty() {
                if let [Some(i), rest @ ..] = run.as_slice()
                    && rest.iter().all(|o| *o == Some(*i))
                {
                    must.push(*i);
                }
                run.clear();
            }
            run.push(owner);
            run_end = run_end.max(end);
        }
    }
    let names = |mut v: Vec<usize>| {
        v.sort();
        v.dedup();
        v.into_iter().map(|i| format!("c{i}")).collect::<Vec<_>>()
    };
    let (may, must) = (names(may), names(must));
    let shown = String::from_utf8_lossy(&text);
    assert!(
        reported.iter().all(|c| may.contains(c)),
        "scan of {shown:?}: {reported:?}, not within {may:?}"
    );
    assert!(
        must.iter().all(|c| reported.contains(c)),
        "scan of {shown:?}: {reported:?}, missing some of {must:?}"
    );

    // Masking: in one piece and streamed alike, and nothing of any secret left.
    let Some(masker) = masking else {
        return;
    };
    let whole = mask_whole(masker, &text);
    let mut chunks = Vec::new();
    let mut from = 0;
    for &cut in &cuts {
        chunks.push(&text[from..cut]);
        from = cut;
    }
    chunks.push(&text[from..]);
    let streamed = mask_streamed(masker, &chunks).expect("the body streams");
    assert_eq!(whole, streamed, "masked whole vs streamed in {} frames", chunks.len());
    for form in all_forms.iter().flatten() {
        assert!(
            !contains(&whole, form, false),
            "{:?} left in the masked text",
            String::from_utf8_lossy(form)
        );
    }
});
