//! Whether bytes hold a form of a secret whatever the case of its ASCII letters: for what the HTTP stack
//! lower-cases on the way (header names), where a form would no longer match byte for byte. A walk of the
//! masker's own automaton with each letter tried in both cases, so it finds exactly the forms masking does.

use aho_corasick::Anchored;
use aho_corasick::automaton::Automaton;
use aho_corasick::automaton::StateID;

use super::Masker;

impl Masker {
    /// Whether `bytes` hold, ASCII case ignored, any form of any secret this masker masks.
    pub(crate) fn holds_folded(&self, bytes: &[u8]) -> bool {
        let nfa = &self.forms.nfa;
        let Ok(start) = nfa.start_state(Anchored::Yes) else {
            // No anchored start: cannot tell, so treat the bytes as holding a secret (dropped, not passed).
            return true;
        };
        let mut states: Vec<StateID> = Vec::new();
        let mut next: Vec<StateID> = Vec::new();
        (0..bytes.len()).any(|from| {
            states.clear();
            states.push(start);
            for &b in &bytes[from..] {
                next.clear();
                for &sid in &states {
                    for case in [b.to_ascii_lowercase(), b.to_ascii_uppercase()] {
                        let to = nfa.next_state(Anchored::Yes, sid, case);
                        if nfa.is_match(to) {
                            return true;
                        }
                        if !nfa.is_dead(to) && !next.contains(&to) {
                            next.push(to);
                        }
                    }
                }
                if next.is_empty() {
                    return false;
                }
                std::mem::swap(&mut states, &mut next);
            }
            false
        })
    }
}

#[cfg(test)]
#[path = "mask_fold_tests.rs"]
mod tests;
