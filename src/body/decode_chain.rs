//! A stack of decoders undone in order, pulled a bounded piece at a time: compressed bytes are queued as
//! they arrive and [`Decoding::pump`] hands out at most about a budget of decoded bytes per call, draining
//! the innermost stage first, so a body that expands a thousandfold at every stage is never held whole.

use bytes::BytesMut;

use crate::body::decode::{DecodeError, Decoder};

/// How much of a stage's queued input is fed to its decoder at once.
const STEP: usize = 4 * 1024;

/// One decoder and the input queued for it.
struct Stage {
    /// `None` once finished.
    decoder: Option<Decoder>,
    /// Bytes waiting to be decoded.
    input: BytesMut,
    /// Whether any byte ever reached it (a body with no bytes at all, as a HEAD answer has, decodes to none
    /// rather than failing as truncated).
    fed: bool,
}

/// The decoders of one body, outermost coding first.
pub(crate) struct Decoding {
    stages: Vec<Stage>,
    /// No more input will come.
    ended: bool,
}

impl Decoding {
    /// Undo `decoders` in this order (the one for the last coding applied first).
    pub(crate) fn new(decoders: Vec<Decoder>) -> Decoding {
        Decoding {
            stages: decoders
                .into_iter()
                .map(|decoder| Stage {
                    decoder: Some(decoder),
                    input: BytesMut::new(),
                    fed: false,
                })
                .collect(),
            ended: false,
        }
    }

    /// Queue bytes as they arrived from the upstream.
    pub(crate) fn push(&mut self, data: &[u8]) {
        if let Some(first) = self.stages.first_mut() {
            first.input.extend_from_slice(data);
            first.fed |= !data.is_empty();
        }
    }

    /// No more bytes will come: what is held is finished by the next pumps.
    pub(crate) fn end(&mut self) {
        self.ended = true;
    }

    /// Whether anything is still to be decoded or finished.
    pub(crate) fn held(&self) -> bool {
        self.next().is_some()
    }

    /// The stage to work on next: the innermost with queued input, or, once the input has ended, the first
    /// one not yet finished whose earlier stages all are.
    fn next(&self) -> Option<usize> {
        let queued = (0..self.stages.len()).rev().find(|&i| !self.stages[i].input.is_empty());
        queued.or_else(|| {
            self.ended
                .then(|| self.stages.iter().position(|s| s.decoder.is_some()))
                .flatten()
        })
    }

    /// Decode until about `budget` bytes have come out of the last stage (or nothing is held), handing
    /// them to `out` in pieces.
    pub(crate) fn pump(&mut self, budget: usize, mut out: impl FnMut(Vec<u8>)) -> Result<(), DecodeError> {
        let mut produced = 0;
        while produced < budget {
            let Some(i) = self.next() else {
                return Ok(());
            };
            let stage = &mut self.stages[i];
            let mut decoded = Vec::new();
            if stage.input.is_empty() {
                if let Some(decoder) = stage.decoder.take() {
                    let rest = decoder.finish();
                    if stage.fed {
                        decoded = rest?;
                    }
                }
            } else if let Some(decoder) = stage.decoder.as_mut() {
                let piece = stage.input.split_to(stage.input.len().min(STEP));
                decoder.push(&piece, |d| decoded.extend_from_slice(&d))?;
            } else {
                // Input after the end of a finished stage cannot happen (a stage finishes only once all
                // before it have): drop it rather than loop.
                stage.input.clear();
            }
            match self.stages.get_mut(i + 1) {
                Some(next) => {
                    next.fed |= !decoded.is_empty();
                    next.input.extend_from_slice(&decoded);
                }
                None if !decoded.is_empty() => {
                    produced += decoded.len();
                    out(decoded);
                }
                None => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "decode_chain_tests.rs"]
mod tests;
