//! Masking secrets on their way back to a sandbox: every form of every secret ([`crate::leak::mask::forms`]) found in
//! a response is replaced with the sandbox's placeholder for that credential, as the bytes stream through.
//! One automaton, ignoring ASCII case, searches the raw bytes and, when they hold escapes or wrapped lines,
//! their decoded reading too ([`crate::leak::mask::view`]); a form found in the reading is replaced where it is in
//! the original.
//!
//! Streaming holds back only what could still become a secret: after each chunk, the output ends where the
//! longest tail of the bytes seen that is the start of some form begins (in the raw bytes or in their
//! reading, and an escape the chunk cuts short). A response that pauses between events (server-sent
//! events, streamed completions) reaches the sandbox without waiting for the next chunk, unless its last
//! bytes could begin a secret.

use std::borrow::Cow;
use std::sync::Arc;

use aho_corasick::automaton::Automaton;
use aho_corasick::nfa::contiguous::NFA;
use aho_corasick::{AhoCorasick, Anchored, MatchKind};
use bytes::{Bytes, BytesMut};
use http::{HeaderMap, HeaderValue};
use secrecy::{ExposeSecret, SecretString};

use crate::leak::forms::PREFILTER_MAX;
use crate::leak::mask::forms::{Style, joined_with, mask_forms};
use crate::leak::mask::view::{self, DecodedView, Holds};

/// The forms of a set of secrets, found in one pass: built once for those secrets and shared by every
/// sandbox that masks them (each with its own placeholders, [`Masker::with`]).
pub struct Forms {
    /// Finds the forms.
    ac: AhoCorasick,
    /// The same forms, walked byte by byte to see whether a tail could still become one.
    nfa: NFA,
    /// For each pattern, the secret (by index) it is a form of.
    owner: Vec<usize>,
    /// For each pattern, how its replacement is written.
    style: Vec<Style>,
    /// How many secrets.
    secrets: usize,
    /// The longest pattern, in bytes.
    longest: usize,
    /// What the secrets hold that the readings must not always take for an escape.
    holds: Holds,
}

impl Forms {
    /// The forms of these secrets; `None` when there is nothing to find.
    pub fn new(secrets: &[SecretString]) -> Option<Forms> {
        let mut patterns: Vec<Vec<u8>> = Vec::new();
        let mut owner = Vec::new();
        let mut style = Vec::new();
        for (i, secret) in secrets.iter().enumerate() {
            let secret = secret.expose_secret().as_bytes();
            if secret.is_empty() {
                continue;
            }
            for (form, how) in mask_forms(secret) {
                if !patterns.iter().any(|p| p.eq_ignore_ascii_case(&form)) {
                    patterns.push(form);
                    owner.push(i);
                    style.push(how);
                }
            }
        }
        if patterns.is_empty() {
            return None;
        }
        let longest = patterns.iter().map(Vec::len).max().unwrap_or(1);
        let built = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostLongest)
            .kind(Some(aho_corasick::AhoCorasickKind::DFA))
            .prefilter(patterns.len() <= PREFILTER_MAX)
            .build(&patterns)
            .and_then(|ac| {
                Ok((
                    ac,
                    NFA::builder()
                        .ascii_case_insensitive(true)
                        .match_kind(MatchKind::LeftmostLongest)
                        .build(&patterns)?,
                ))
            });
        let (ac, nfa) = built
            .map_err(|e| tracing::error!("cannot build the masking automaton: {e}"))
            .ok()?;
        let holds = Holds::of(secrets.iter().map(|s| s.expose_secret().as_bytes()));
        Some(Forms {
            ac,
            nfa,
            owner,
            style,
            secrets: secrets.len(),
            longest,
            holds,
        })
    }
}

/// The forms of some secrets, each replaced with one sandbox's placeholder for its credential.
pub struct Masker {
    forms: Arc<Forms>,
    /// What each secret (by index) is replaced with.
    replacements: Vec<Bytes>,
}

impl Masker {
    /// A masker replacing every form of each secret with its placeholder; `None` when there is nothing to
    /// mask.
    pub fn new(secrets: &[(SecretString, String)]) -> Option<Masker> {
        let values: Vec<SecretString> = secrets.iter().map(|(s, _)| s.clone()).collect();
        let forms = Arc::new(Forms::new(&values)?);
        Some(Masker::with(forms, secrets.iter().map(|(_, p)| p.as_str()).collect()))
    }

    /// The masker of `forms` with these placeholders, one per secret `forms` was built from, in order (a
    /// missing one masks with `cordon-masked`).
    pub fn with(forms: Arc<Forms>, placeholders: Vec<&str>) -> Masker {
        let replacements = (0..forms.secrets)
            .map(|i| Bytes::copy_from_slice(placeholders.get(i).copied().unwrap_or("cordon-masked").as_bytes()))
            .collect();
        Masker { forms, replacements }
    }

    /// What replaces the form `hit` found in `bytes`: the placeholder, written as the form was (a separator
    /// between characters as the original wrote its first one: `\n` in a JSON string, `%0A` in a URL).
    fn replacement(&self, hit: &Hit, bytes: &[u8]) -> Cow<'_, [u8]> {
        let placeholder = &self.replacements[self.forms.owner[hit.pattern]];
        match self.forms.style[hit.pattern] {
            Style::Plain => Cow::Borrowed(placeholder),
            Style::Joined(sep) => {
                let written = hit.sep.and_then(|(a, b)| bytes.get(a..b));
                Cow::Owned(joined_with(placeholder, written.unwrap_or(&[sep])))
            }
        }
    }

    /// Whether `bytes` hold any form of any secret this masker masks (ASCII case ignored, as everywhere).
    pub(crate) fn holds(&self, bytes: &[u8]) -> bool {
        !self.search(bytes, true).hits.is_empty()
    }

    /// `bytes` with every secret replaced, or `None` if it holds none (nothing is copied then).
    pub fn mask(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        let found = self.search(bytes, true);
        if found.hits.is_empty() {
            return None;
        }
        let mut out = Vec::with_capacity(bytes.len());
        let mut pos = 0;
        for h in &found.hits {
            out.extend_from_slice(&bytes[pos..h.start]);
            out.extend_from_slice(&self.replacement(h, bytes));
            pos = h.end;
        }
        out.extend_from_slice(&bytes[pos..]);
        Some(out)
    }

    /// Mask every header value (values that are not text included); a value that would no longer be a
    /// valid header is replaced by its placeholders alone.
    pub fn mask_headers(&self, headers: &mut HeaderMap) {
        for value in headers.values_mut() {
            if let Some(masked) = self.mask(value.as_bytes()) {
                *value = HeaderValue::from_bytes(&masked).unwrap_or_else(|_| HeaderValue::from_static("cordon-masked"));
            }
        }
    }

    /// A stream masking a body chunk by chunk.
    pub fn stream(self: &Arc<Self>) -> MaskStream {
        MaskStream {
            masker: self.clone(),
            carry: BytesMut::new(),
        }
    }

    /// Every form in `bytes` and in their reading (`at_end` when nothing follows them), in order, without
    /// overlaps (forms that overlap are replaced as one), each made of whole escapes.
    fn search(&self, bytes: &[u8], at_end: bool) -> Search {
        let ac = &self.forms.ac;
        let mut hits: Vec<Hit> = ac
            .find_iter(bytes)
            .map(|m| Hit {
                start: m.start(),
                end: m.end(),
                pattern: m.pattern().as_usize(),
                sep: None,
            })
            .collect();
        let views = view::readings(bytes, at_end, self.forms.holds);
        if views.is_empty() {
            return Search { hits, views };
        }
        // SECURITY: a form found in the raw bytes that starts or ends inside an escape (a secret starting
        // with `n` right after a `\`) is replaced with the whole escape, so a JSON string stays one. Only the
        // escapes of the text itself count: a reading of a reading joins an escaped `\\` to the quote after it
        // (`\\"` read twice is `"`), and a form ending at that `\\` (a secret ending in `\`) would take the
        // string's closing quote with it.
        for h in &mut hits {
            for v in views.iter().chain(&views).filter(|v| !v.nested) {
                (h.start, h.end) = (v.unit_start(h.start), v.unit_end(h.end));
            }
        }
        for v in &views {
            hits.extend(ac.find_iter(&v.bytes).map(|m| Hit {
                start: v.span[m.start()].0,
                end: v.span[m.end() - 1].1,
                pattern: m.pattern().as_usize(),
                sep: v.span.get(m.start() + 1).copied(),
            }));
        }
        hits.sort_by_key(|h| (h.start, std::cmp::Reverse(h.end)));
        hits.dedup_by(|later, kept| {
            let overlaps = later.start < kept.end;
            if overlaps {
                kept.end = kept.end.max(later.end);
            }
            overlaps
        });
        Search { hits, views }
    }

    /// Where the earliest tail of `bytes[from..]` that could still become a form begins, in the raw bytes
    /// or in one of their readings (an escape the end cuts short included), never inside an escape.
    fn open_from(&self, bytes: &[u8], views: &[DecodedView], from: usize) -> usize {
        let mut open = self.held_from(bytes, from);
        for v in views {
            let i = self.held_from(&v.bytes, v.index_at(from));
            let read = if i < v.bytes.len() {
                v.source(i, bytes.len())
            } else if v.cut_escape {
                v.read_to
            } else {
                bytes.len()
            };
            open = open.min(read);
        }
        // Twice: a span of one reading may start inside a span of another.
        for v in views.iter().chain(views) {
            open = v.unit_start(open);
        }
        open.max(from)
    }

    /// Where the longest tail of `bytes[from..]` that is the start of some pattern begins (`bytes.len()` if
    /// none is): what must be held back until the next chunk shows whether it becomes a secret.
    fn held_from(&self, bytes: &[u8], from: usize) -> usize {
        let forms = &self.forms;
        let start = from.max(bytes.len().saturating_sub(forms.longest - 1));
        let Ok(anchored) = forms.nfa.start_state(Anchored::Yes) else {
            return start;
        };
        (start..bytes.len())
            .find(|&i| {
                let mut sid = anchored;
                bytes[i..].iter().all(|&b| {
                    sid = forms.nfa.next_state(Anchored::Yes, sid, b);
                    !forms.nfa.is_dead(sid)
                })
            })
            .unwrap_or(bytes.len())
    }
}

/// A form found, in the original bytes.
struct Hit {
    start: usize,
    end: usize,
    pattern: usize,
    /// Where its first separator is written, when it was found in a reading (a joined form's).
    sep: Option<(usize, usize)>,
}

/// What one search found: the forms, and the readings it made (kept to see what must be held back).
struct Search {
    hits: Vec<Hit>,
    views: Vec<DecodedView>,
}

/// A body being masked: what is ready goes out at once, what could still become a secret is carried.
pub struct MaskStream {
    masker: Arc<Masker>,
    carry: BytesMut,
}

impl MaskStream {
    /// Mask the next chunk; returns what may be sent now (possibly empty).
    pub fn push(&mut self, chunk: Bytes) -> Bytes {
        let buf = if self.carry.is_empty() {
            chunk
        } else {
            self.carry.extend_from_slice(&chunk);
            self.carry.split().freeze()
        };
        // Matches that start before the earliest tail that could still grow into a secret are final (no
        // longer or earlier match can appear with more bytes); the rest waits for the next chunk.
        let found = self.masker.search(&buf, false);
        let open = self.masker.open_from(&buf, &found.views, 0);
        let mut out = BytesMut::new();
        let mut pos = 0;
        for h in &found.hits {
            if h.start >= open {
                break;
            }
            out.extend_from_slice(&buf[pos..h.start]);
            out.extend_from_slice(&self.masker.replacement(h, &buf));
            pos = h.end;
        }
        let cut = if pos > open {
            self.masker.open_from(&buf, &found.views, pos)
        } else {
            open
        };
        self.carry.extend_from_slice(&buf[cut..]);
        if out.is_empty() {
            // No secret in this chunk: send its safe part without copying it.
            return buf.slice(pos..cut);
        }
        out.extend_from_slice(&buf[pos..cut]);
        out.freeze()
    }

    /// The end of the body: the carried bytes, masked.
    pub fn finish(&mut self) -> Bytes {
        let rest = self.carry.split().freeze();
        match self.masker.mask(&rest) {
            Some(masked) => Bytes::from(masked),
            None => rest,
        }
    }
}

#[cfg(test)]
#[path = "masker_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "masker_proptests.rs"]
mod proptests;
