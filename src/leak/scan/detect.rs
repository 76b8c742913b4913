//! The exfiltration scan: every placeholder and every real secret in a text the sandbox sends, in the raw
//! bytes and in every reading decoding makes of them ([`crate::leak::scan::views`]), case-insensitively, in one pass of
//! one automaton per reading.

use std::borrow::Cow;

use aho_corasick::automaton::Automaton;
use aho_corasick::nfa::contiguous::NFA;
use aho_corasick::{AhoCorasick, Anchored, MatchKind};
use secrecy::{ExposeSecret, SecretString};

use crate::leak::forms::forms;
use crate::leak::scan::views::{Readings, views};
use crate::placeholder::PREFIX;

/// Hex digits after the prefix in a placeholder.
const PLACEHOLDER_HEX: usize = 32;

/// What one scan found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Found {
    /// Placeholders as cordon issued them (lower case, not encoded), one entry per occurrence.
    pub plain: Vec<String>,
    /// Placeholders that only a decoding reveals, or written in another case: never where they may be swapped.
    pub disguised: Vec<String>,
    /// Real secrets in the text (in any of their forms): for each, the credentials it is the secret of.
    pub secrets: Vec<Vec<String>>,
}

impl Found {
    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.plain.is_empty() && self.disguised.is_empty() && self.secrets.is_empty()
    }

    /// The first secret found that none of its credentials may carry here (by `usable`), named by one of them.
    pub fn off_binding(&self, usable: &dyn Fn(&str) -> bool) -> Option<&str> {
        self.secrets
            .iter()
            .find(|owners| !owners.iter().any(|c| usable(c)))
            .and_then(|owners| owners.first())
            .map(String::as_str)
    }

    /// Add what another scan found.
    pub fn merge(&mut self, other: Found) {
        self.plain.extend(other.plain);
        self.disguised.extend(other.disguised);
        for s in other.secrets {
            if !self.secrets.contains(&s) {
                self.secrets.push(s);
            }
        }
    }
}

/// The scanner for one set of known secrets.
pub struct Detector {
    /// Finds the forms, case-insensitively.
    ac: AhoCorasick,
    /// The same forms, walked byte by byte to see whether a tail could still become one.
    nfa: NFA,
    /// For each pattern: nothing for a form of the placeholder prefix, else the credentials whose secret it
    /// is a form of.
    owners: Vec<Vec<String>>,
    /// The longest pattern.
    longest: usize,
}

impl Detector {
    /// A scanner for placeholders and for these secrets (credential, value).
    pub fn new(secrets: &[(String, SecretString)]) -> Result<Detector, aho_corasick::BuildError> {
        // The prefix as written, then its encoded forms (base64 at every alignment, hex): a placeholder
        // hidden in Basic credentials or a base64 field is found without decoding every run of letters.
        let mut patterns: Vec<Vec<u8>> = vec![PREFIX.as_bytes().to_vec()];
        let mut owners: Vec<Vec<String>> = vec![Vec::new()];
        for form in forms(PREFIX.as_bytes()) {
            if !patterns.iter().any(|p| p.eq_ignore_ascii_case(&form)) {
                patterns.push(form);
                owners.push(Vec::new());
            }
        }
        for (credential, secret) in secrets {
            for form in forms(secret.expose_secret().as_bytes()) {
                match patterns.iter().position(|p| p.eq_ignore_ascii_case(&form)) {
                    // Two credentials with one secret: it may go wherever either may.
                    Some(i) if !owners[i].is_empty() => {
                        if !owners[i].contains(credential) {
                            owners[i].push(credential.clone());
                        }
                    }
                    Some(_) => {}
                    None => {
                        patterns.push(form);
                        owners.push(vec![credential.clone()]);
                    }
                }
            }
        }
        let longest = patterns.iter().map(Vec::len).max().unwrap_or(PREFIX.len());
        let ac = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostLongest)
            .kind(Some(aho_corasick::AhoCorasickKind::DFA))
            .prefilter(patterns.len() <= crate::leak::forms::PREFILTER_MAX)
            .build(&patterns)?;
        let nfa = NFA::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostLongest)
            .build(&patterns)?;
        Ok(Detector {
            ac,
            nfa,
            owners,
            longest,
        })
    }

    /// How many trailing bytes a streaming scan must keep between chunks: enough for the longest pattern
    /// written in its longest encoding (percent-encoded twice: five bytes a byte).
    pub fn window(&self) -> usize {
        (self.longest + PLACEHOLDER_HEX) * 5 + 64
    }

    /// Every placeholder and secret in `text` and its readings.
    pub fn scan(&self, text: &[u8]) -> Found {
        self.scan_readings(&views(text))
    }

    /// What [`Detector::scan`] says of a text whose readings are made already.
    pub(crate) fn scan_read(&self, read: &Readings) -> Found {
        self.scan_readings(&read.all())
    }

    /// What [`Detector::scan`] and [`Detector::open_ended`] say of `text`, its readings made once.
    pub(crate) fn scan_open(&self, text: &[u8]) -> (Found, bool) {
        let readings = views(text);
        (self.scan_readings(&readings), self.open_readings(&readings))
    }

    /// Every placeholder and secret in these readings of a text (the text itself first).
    fn scan_readings(&self, readings: &[Cow<'_, [u8]>]) -> Found {
        let mut found = Found::default();
        let mut raw_counts: Vec<String> = Vec::new();
        for (i, view) in readings.iter().enumerate() {
            let mut in_view: Vec<String> = Vec::new();
            for m in self.ac.find_iter(view.as_ref()) {
                match &self.owners[m.pattern().as_usize()] {
                    owners if !owners.is_empty() => {
                        if !found.secrets.contains(owners) {
                            found.secrets.push(owners.clone());
                        }
                    }
                    _ => {
                        let token = token_at(view, m.start(), m.end());
                        let as_issued = &view[m.start()..m.end()] == PREFIX.as_bytes()
                            && view[m.end()..]
                                .iter()
                                .take(PLACEHOLDER_HEX)
                                .all(|b| !b.is_ascii_uppercase());
                        if i == 0 && as_issued {
                            raw_counts.push(token.clone());
                            found.plain.push(token);
                        } else if i == 0 {
                            found.disguised.push(token);
                        } else {
                            in_view.push(token);
                        }
                    }
                }
            }
            // A reading holds more of a placeholder than the raw text: some of it was encoded.
            for token in &in_view {
                let here = in_view.iter().filter(|t| *t == token).count();
                let raw = raw_counts.iter().filter(|t| *t == token).count();
                if here > raw && !found.disguised.contains(token) {
                    found.disguised.push(token.clone());
                }
            }
        }
        found
    }
}

impl Detector {
    /// Whether the end of `text`, or of a reading of it, could be the start of a placeholder or a secret:
    /// then the next bytes must be scanned with it before any of it is sent.
    pub fn open_ended(&self, text: &[u8]) -> bool {
        self.open_readings(&views(text))
    }

    /// Whether the end of any of these readings could be the start of a placeholder or a secret.
    fn open_readings(&self, readings: &[Cow<'_, [u8]>]) -> bool {
        let Ok(anchored) = self.nfa.start_state(Anchored::Yes) else {
            return true;
        };
        readings.iter().any(|view| {
            let from = view.len().saturating_sub(self.longest + PLACEHOLDER_HEX);
            (from..view.len()).any(|i| {
                let mut sid = anchored;
                view[i..].iter().all(|&b| {
                    sid = self.nfa.next_state(Anchored::Yes, sid, b);
                    !self.nfa.is_dead(sid)
                })
            })
        })
    }
}

/// The placeholder-shaped token at `start..end` (the prefix and the hex digits after it), lower-cased; a
/// prefix found in an encoded form gives the prefix alone.
fn token_at(view: &[u8], start: usize, end: usize) -> String {
    if !view[start..end].eq_ignore_ascii_case(PREFIX.as_bytes()) {
        return PREFIX.to_string();
    }
    let after = &view[end..];
    let hex: String = after
        .iter()
        .take(PLACEHOLDER_HEX)
        .take_while(|b| b.is_ascii_hexdigit())
        .map(|b| char::from(b.to_ascii_lowercase()))
        .collect();
    format!("{PREFIX}{hex}")
}

#[cfg(test)]
#[path = "detect_tests.rs"]
mod tests;
