//! The lines the audit thread has taken but not yet handed to the operating system. A batch is gathered here
//! and written with as few `write`s as the output takes; what a failing or full disk did not take stays here,
//! byte for byte, and is written first when the disk takes writes again: a line cut by a partial write is
//! completed, none is written twice.

use std::sync::Arc;

use super::health::Health;
use super::output::{Output, write_taken};
use super::spool::SpoolWriter;

/// How much the thread holds while the output fails before it stops taking lines (the records of requests
/// refused meanwhile; requests are not served while the output fails, so this is what they were refused).
pub(crate) const HOLD_AT_MOST: usize = 16 << 20;

/// The lines not yet written, and the output's health as the last write found it.
pub(crate) struct Unwritten {
    buf: Vec<u8>,
    health: Arc<Health>,
    limit: usize,
    /// Lines not taken since the last one that was.
    dropped: u64,
    /// The export spool, which gets every line taken, also while the output fails.
    tee: Option<SpoolWriter>,
}

impl Unwritten {
    pub(crate) fn new(health: Arc<Health>) -> Unwritten {
        Unwritten::with_limit(health, HOLD_AT_MOST)
    }

    pub(crate) fn with_limit(health: Arc<Health>, limit: usize) -> Unwritten {
        Unwritten {
            buf: Vec::new(),
            health,
            limit,
            dropped: 0,
            tee: None,
        }
    }

    /// Copy every line taken to the export spool too.
    pub(crate) fn tee(mut self, spool: Option<SpoolWriter>) -> Unwritten {
        self.tee = spool;
        self
    }

    /// Whether there is room for another line; if not, the line is counted as dropped.
    pub(crate) fn room(&mut self) -> bool {
        if self.buf.len() < self.limit {
            return true;
        }
        self.dropped += 1;
        self.health.count_dropped();
        false
    }

    /// How many lines were dropped since the last one taken, now that one is taken again (zero: none).
    pub(crate) fn take_dropped(&mut self) -> u64 {
        std::mem::take(&mut self.dropped)
    }

    /// Add one finished line.
    pub(crate) fn push(&mut self, line: &[u8]) {
        self.buf.extend_from_slice(line);
        if let Some(tee) = &mut self.tee {
            tee.push(line);
        }
    }

    /// Whether lines are waiting (the last write failed).
    pub(crate) fn waiting(&self) -> bool {
        !self.buf.is_empty()
    }

    /// Whether the last write failed.
    pub(crate) fn failing(&self) -> bool {
        !self.health.is_up()
    }

    /// Bytes waiting.
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    /// Write out everything held and flush; what the output did not take stays. The spool gets its copy.
    pub(crate) fn write_to<W: Output + ?Sized>(&mut self, out: &mut W) -> std::io::Result<()> {
        if let Some(tee) = &mut self.tee {
            tee.flush();
        }
        let (done, result) = write_taken(out, &self.buf);
        let result = result.and_then(|()| out.flush());
        self.buf.drain(..done);
        if self.buf.is_empty() && self.buf.capacity() > 4 << 20 {
            // After an outage, give back what holding it took.
            self.buf = Vec::new();
        }
        match &result {
            Ok(()) => self.health.up(),
            Err(e) => self.health.down(e),
        }
        result
    }
}

#[cfg(test)]
#[path = "unwritten_tests.rs"]
mod tests;
