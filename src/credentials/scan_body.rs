//! A request body scanned for placeholders and secrets as it streams upstream, whatever its size. Nothing
//! that could be part of a finding leaves before it has been scanned: the last [`Detector::window`] bytes
//! stay behind until the next chunk (or the end) shows they hold none. A compressed body is scanned as the
//! upstream will read it (decompressed), and its compressed bytes are held back by the same rule.
//!
//! On a finding the body ends in an error, so the upstream never receives the rest, and the finding waits
//! in the [`Verdict`] for the pipeline to answer the sandbox with.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use http_body::Frame;

use super::decode::Decoder;
use super::detect::{Detector, Found};
use crate::body::{BoxError, Filter, Filtered, ProxyBody};

/// What a body scan found that refuses the request, once it has.
#[derive(Clone, Default)]
pub(crate) struct Verdict(Arc<Mutex<Option<Found>>>);

impl Verdict {
    /// The finding, if the scan refused the body.
    pub(crate) fn take(&self) -> Option<Found> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    fn set(&self, found: Found) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(found);
    }
}

/// Whether a finding refuses the request (secrets bound to the destination do not).
pub(crate) type Refuses = Box<dyn Fn(&Found) -> bool + Send + Sync>;

/// The scanned body.
pub(crate) type ScanBody = Filtered<Scan>;

/// Scanning as a body [`Filter`].
pub(crate) struct Scan {
    detector: Arc<Detector>,
    refuses: Refuses,
    verdict: Verdict,
    decoder: Option<Decoder>,
    /// The last bytes scanned (decoded, if the body is compressed), kept as context for the next scan.
    context: BytesMut,
    /// Raw chunks not yet sent, each with how many scanned bytes existed once it was read.
    held: VecDeque<(Bytes, usize)>,
    /// Scanned bytes so far.
    scanned: usize,
    /// Scanned bytes after which nothing can begin a finding that is not yet whole.
    settled: usize,
}

impl ScanBody {
    /// Scan `inner` (undoing its content coding with `decoder`), refusing what `refuses` says.
    pub(crate) fn new(
        inner: ProxyBody,
        detector: Arc<Detector>,
        decoder: Option<Decoder>,
        refuses: Refuses,
        verdict: Verdict,
    ) -> ScanBody {
        Filtered::with(
            inner,
            Scan {
                detector,
                refuses,
                verdict,
                decoder,
                context: BytesMut::new(),
                held: VecDeque::new(),
                scanned: 0,
                settled: 0,
            },
        )
    }
}

impl Scan {
    fn scan(&mut self, fresh: &[u8]) -> Result<(), BoxError> {
        if fresh.is_empty() {
            return Ok(());
        }
        self.context.extend_from_slice(fresh);
        self.scanned += fresh.len();
        let found = self.detector.scan(&self.context);
        if !found.is_empty() && (self.refuses)(&found) {
            self.verdict.set(found);
            return Err(
                "the request body carries a placeholder or a secret it may not (credential_exfiltration)".into(),
            );
        }
        if self.detector.open_ended(&self.context) {
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

    /// Send the raw chunks whose scanned bytes are followed by a whole window of scanned bytes, or after which
    /// nothing can begin a finding (all of them at the end): nothing that could begin a finding leaves
    /// unscanned, and a body whose end begins nothing is not held at all (streamed uploads flow).
    fn release(&mut self, all: bool, out: &mut VecDeque<Frame<Bytes>>) {
        let window = self.detector.window();
        while let Some((_, end)) = self.held.front() {
            if !all && *end > self.settled && end + window > self.scanned {
                break;
            }
            if let Some((raw, _)) = self.held.pop_front() {
                out.push_back(Frame::data(raw));
            }
        }
    }
}

impl Filter for Scan {
    /// Scan what `raw` adds; on a refusal, the error that ends the body.
    fn data(&mut self, raw: Bytes, out: &mut VecDeque<Frame<Bytes>>) -> Result<(), BoxError> {
        let mut fresh = Vec::new();
        match &mut self.decoder {
            Some(decoder) => decoder.push(&raw, |decoded| fresh.extend_from_slice(&decoded))?,
            None => fresh.extend_from_slice(&raw),
        }
        self.scan(&fresh)?;
        self.held.push_back((raw, self.scanned));
        self.release(false, out);
        Ok(())
    }

    fn end(&mut self, out: &mut VecDeque<Frame<Bytes>>) -> Result<(), BoxError> {
        if let Some(decoder) = self.decoder.take() {
            let rest = decoder.finish()?;
            self.scan(&rest)?;
        }
        self.release(true, out);
        Ok(())
    }

    fn trailers(&mut self, trailers: HeaderMap) -> Result<HeaderMap, BoxError> {
        for value in trailers.values() {
            let found = self.detector.scan(value.as_bytes());
            if !found.is_empty() && (self.refuses)(&found) {
                self.verdict.set(found);
                return Err("a request trailer carries a placeholder or a secret".into());
            }
        }
        Ok(trailers)
    }

    /// Scanning changes nothing: the length is the inner body's.
    fn keeps_length(&self) -> bool {
        true
    }
}

#[cfg(test)]
#[path = "scan_body_tests.rs"]
mod tests;
