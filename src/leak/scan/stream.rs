//! What the sandbox sends, scanned for placeholders and secrets as it streams, whatever its size: the core
//! of a request body's scan ([`crate::leak::scan::body`]) and of a WebSocket message's. Nothing that could be part
//! of a finding leaves before it has been scanned: the last [`Detector::window`] bytes stay behind until the
//! next chunk (or the end) shows they hold none, and nothing is held once the bytes seen end where no finding
//! can begin.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use crate::leak::scan::detect::{Detector, Found};

/// Whether a finding refuses what carries it (secrets bound to the destination do not).
pub(crate) type Refuses = Box<dyn Fn(&Found) -> bool + Send + Sync>;

/// What the sandbox streams refuses any placeholder (none is ever swapped in a stream) and any secret not
/// bound here (not one of the `usable` credentials').
pub(crate) fn streamed_refuses(usable: &[crate::names::CredentialName]) -> Refuses {
    let usable = usable.to_vec();
    Box::new(move |found: &Found| {
        !found.plain.is_empty()
            || !found.disguised.is_empty()
            || found.off_binding(&|c: &str| usable.iter().any(|u| u == c)).is_some()
    })
}

/// A stream of chunks being scanned: each chunk is held until what follows it shows it begins no finding.
pub(crate) struct ScanStream {
    detector: Arc<Detector>,
    refuses: Refuses,
    /// The last bytes scanned, kept as context for the next scan.
    context: BytesMut,
    /// Chunks not yet let go.
    held: VecDeque<HeldChunk>,
    /// Scanned bytes so far.
    scanned: usize,
    /// Scanned bytes after which nothing can begin a finding that is not yet whole.
    settled: usize,
}

/// A chunk held back.
struct HeldChunk {
    raw: Bytes,
    /// How many scanned bytes existed once it was read.
    end: usize,
    /// The chunk is what was scanned, byte for byte, so its settled start may go before its end does.
    plain: bool,
}

impl ScanStream {
    /// A scan with `detector`, refusing what `refuses` says.
    pub(crate) fn new(detector: Arc<Detector>, refuses: Refuses) -> ScanStream {
        ScanStream {
            detector,
            refuses,
            context: BytesMut::new(),
            held: VecDeque::new(),
            scanned: 0,
            settled: 0,
        }
    }

    /// Scan `chunk` itself; the chunks (or parts of them) that may go now are pushed to `out`, or the finding
    /// that refuses it is returned (and nothing of it goes).
    pub(crate) fn push(&mut self, chunk: Bytes, out: &mut Vec<Bytes>) -> Result<(), Found> {
        self.scan(&chunk)?;
        self.held.push_back(HeldChunk {
            raw: chunk,
            end: self.scanned,
            plain: true,
        });
        self.release(false, out);
        Ok(())
    }

    /// Scan `fresh` (what `raw` reads as, decoded), holding `raw` whole until it may go.
    pub(crate) fn push_read(&mut self, raw: Bytes, fresh: &[u8], out: &mut Vec<Bytes>) -> Result<(), Found> {
        self.scan(fresh)?;
        self.held.push_back(HeldChunk {
            raw,
            end: self.scanned,
            plain: false,
        });
        self.release(false, out);
        Ok(())
    }

    /// Scan what a decoder still gave at the end, without a raw chunk of its own.
    pub(crate) fn scan_rest(&mut self, fresh: &[u8]) -> Result<(), Found> {
        self.scan(fresh)
    }

    /// The end: everything held goes (it has all been scanned).
    pub(crate) fn finish(&mut self, out: &mut Vec<Bytes>) {
        self.release(true, out);
        self.context.clear();
        self.scanned = 0;
        self.settled = 0;
    }

    /// Scan `bytes` alone, whole (a header value, a control frame), leaving the stream as it is.
    pub(crate) fn check(&self, bytes: &[u8]) -> Result<(), Found> {
        let found = self.detector.scan(bytes);
        if self.refuses(&found) { Err(found) } else { Ok(()) }
    }

    /// Whether `found` refuses what carries it.
    fn refuses(&self, found: &Found) -> bool {
        !found.is_empty() && (self.refuses)(found)
    }

    fn scan(&mut self, fresh: &[u8]) -> Result<(), Found> {
        if fresh.is_empty() {
            return Ok(());
        }
        self.context.extend_from_slice(fresh);
        self.scanned += fresh.len();
        let (found, open) = self.detector.scan_open(&self.context);
        if self.refuses(&found) {
            return Err(found);
        }
        if open {
            // The end could still become a finding: keep a window of context for the next scan.
            let keep = self.detector.window();
            if self.context.len() > keep {
                let drop = self.context.len() - keep;
                let _ = self.context.split_to(drop);
            }
        } else {
            // Nothing can straddle this point: everything scanned may go, and no context is needed.
            self.context.clear();
            self.settled = self.scanned;
        }
        Ok(())
    }

    /// Let go of the chunks whose scanned bytes are followed by a whole window of scanned bytes, or after
    /// which nothing can begin a finding (all of them at the end); of a plain chunk, also the part before
    /// that point.
    fn release(&mut self, all: bool, out: &mut Vec<Bytes>) {
        let safe = self.settled.max(self.scanned.saturating_sub(self.detector.window()));
        while let Some(front) = self.held.front_mut() {
            if all || front.end <= safe {
                if let Some(held) = self.held.pop_front() {
                    out.push(held.raw);
                }
                continue;
            }
            // A plain chunk's bytes are the last `raw.len()` scanned before its end, so part of it can go; a
            // read chunk (framed, encoded) goes whole or not at all, and its raw length says nothing about
            // where its scanned bytes begin (a framed chunk is longer than what it carries).
            if front.plain {
                let start = front.end.saturating_sub(front.raw.len());
                if safe > start {
                    out.push(front.raw.split_to(safe - start));
                }
            }
            break;
        }
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
