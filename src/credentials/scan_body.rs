//! A request body scanned for placeholders and secrets as it streams upstream, whatever its size. Nothing
//! that could be part of a finding leaves before it has been scanned: the last [`Detector::window`] bytes
//! stay behind until the next chunk (or the end) shows they hold none. A compressed body is scanned as the
//! upstream will read it (decompressed), and its compressed bytes are held back by the same rule.
//!
//! On a finding the body ends in an error, so the upstream never receives the rest, and the finding waits
//! in the [`Verdict`] for the pipeline to answer the sandbox with.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};

use super::decode::Decoder;
use super::detect::{Detector, Found};
use crate::body::{BoxError, ProxyBody};

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
pub(crate) struct ScanBody {
    inner: ProxyBody,
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
    ready: VecDeque<Frame<Bytes>>,
    done: bool,
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
        ScanBody {
            inner,
            detector,
            refuses,
            verdict,
            decoder,
            context: BytesMut::new(),
            held: VecDeque::new(),
            scanned: 0,
            settled: 0,
            ready: VecDeque::new(),
            done: false,
        }
    }

    /// Scan what `raw` adds; on a refusal, the error that ends the body.
    fn take_in(&mut self, raw: Bytes) -> Result<(), BoxError> {
        let mut fresh = Vec::new();
        match &mut self.decoder {
            Some(decoder) => decoder.push(&raw, |decoded| fresh.extend_from_slice(&decoded))?,
            None => fresh.extend_from_slice(&raw),
        }
        self.scan(&fresh)?;
        self.held.push_back((raw, self.scanned));
        self.release(false);
        Ok(())
    }

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
    fn release(&mut self, all: bool) {
        let window = self.detector.window();
        while let Some((_, end)) = self.held.front() {
            if !all && *end > self.settled && end + window > self.scanned {
                break;
            }
            if let Some((raw, _)) = self.held.pop_front() {
                self.ready.push_back(Frame::data(raw));
            }
        }
    }

    fn finish(&mut self) -> Result<(), BoxError> {
        if let Some(decoder) = self.decoder.take() {
            let rest = decoder.finish()?;
            self.scan(&rest)?;
        }
        self.release(true);
        Ok(())
    }
}

impl Body for ScanBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        loop {
            if let Some(frame) = this.ready.pop_front() {
                return Poll::Ready(Some(Ok(frame)));
            }
            if this.done {
                return Poll::Ready(None);
            }
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => this.take_in(data)?,
                    Err(frame) => {
                        this.finish()?;
                        if let Some(trailers) = frame.trailers_ref() {
                            for value in trailers.values() {
                                let found = this.detector.scan(value.as_bytes());
                                if !found.is_empty() && (this.refuses)(&found) {
                                    this.verdict.set(found);
                                    return Poll::Ready(Some(Err(
                                        "a request trailer carries a placeholder or a secret".into(),
                                    )));
                                }
                            }
                        }
                        this.ready.push_back(frame);
                        this.done = true;
                    }
                },
                Poll::Ready(None) => {
                    this.finish()?;
                    this.done = true;
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.ready.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        // Scanning changes nothing: the length is the inner body's.
        self.inner.size_hint()
    }
}

#[cfg(test)]
#[path = "scan_body_tests.rs"]
mod tests;
