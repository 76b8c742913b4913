//! What cordon holds of MCP answers it has not finished reading (an event that has not ended, a JSON answer not
//! yet whole), bounded per sandbox and in all: a hostile server (or many) that starts large events and never
//! ends them cannot make cordon hold more than [`MOST_HELD`], nor one sandbox's servers more than
//! [`MOST_HELD_PER_SANDBOX`] of it. An answer that would go past either is cut (`mcp_answer_unreadable`).

use crate::locks::Unpoisoned;
use crate::names::Incarnation;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The most bytes of unfinished MCP answers held at once, in all.
pub(crate) const MOST_HELD: usize = 64 * 1024 * 1024;
/// The most bytes of unfinished MCP answers held at once for one sandbox (incarnation).
pub(crate) const MOST_HELD_PER_SANDBOX: usize = 16 * 1024 * 1024;

/// The bytes held, in all and per sandbox.
#[derive(Debug, Default)]
pub(crate) struct Held {
    counts: Mutex<HeldCounts>,
}

#[derive(Debug, Default)]
struct HeldCounts {
    all: usize,
    by: HashMap<Incarnation, usize>,
}

impl Held {
    /// Hold `n` more bytes for `who`, or say why not (nothing is held then).
    fn take(&self, who: &Incarnation, n: usize) -> Result<(), String> {
        let mut c = self.counts.lock().unpoisoned();
        let mine = c.by.get(who).copied().unwrap_or(0);
        if mine + n > MOST_HELD_PER_SANDBOX {
            return Err(format!(
                "the sandbox's MCP answers not yet read to an end would hold over {MOST_HELD_PER_SANDBOX} bytes"
            ));
        }
        if c.all + n > MOST_HELD {
            return Err(format!(
                "MCP answers not yet read to an end would hold over {MOST_HELD} bytes in all"
            ));
        }
        c.all += n;
        c.by.insert(who.clone(), mine + n);
        Ok(())
    }

    /// Give back `n` bytes `who` held.
    fn give(&self, who: &Incarnation, n: usize) {
        if n == 0 {
            return;
        }
        let mut c = self.counts.lock().unpoisoned();
        c.all = c.all.saturating_sub(n);
        if let Some(mine) = c.by.get_mut(who) {
            *mine = mine.saturating_sub(n);
            if *mine == 0 {
                c.by.remove(who);
            }
        }
    }

    /// The bytes held now, in all.
    #[cfg(test)]
    pub(crate) fn all(&self) -> usize {
        self.counts.lock().unpoisoned().all
    }
}

/// One answer's share of what is held, given back when it is dropped.
#[derive(Debug)]
pub(crate) struct Share {
    held: Arc<Held>,
    who: Incarnation,
    bytes: usize,
}

impl Share {
    /// An empty share of `held` for the sandbox `who`.
    pub(crate) fn new(held: Arc<Held>, who: Incarnation) -> Share {
        Share { held, who, bytes: 0 }
    }

    /// Hold `n` more bytes, at most `most` in this share; or say why not.
    pub(crate) fn grow(&mut self, n: usize, most: usize, what: &str) -> Result<(), String> {
        if self.bytes + n > most {
            return Err(format!("{what} over {most} bytes"));
        }
        self.held.take(&self.who, n)?;
        self.bytes += n;
        Ok(())
    }

    /// Give back all this share holds (an event ended).
    pub(crate) fn release(&mut self) {
        self.held.give(&self.who, std::mem::take(&mut self.bytes));
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(test)]
#[path = "held_tests.rs"]
mod tests;
