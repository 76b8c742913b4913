//! A request body scanned for placeholders and secrets as it streams upstream, whatever its size, by a
//! [`ScanStream`]: nothing that could be part of a finding leaves before it has been scanned. A compressed
//! body is scanned as the upstream will read it (decompressed), and its compressed bytes are held back by the
//! same rule.
//!
//! On a finding the body ends in an error, so the upstream never receives the rest, and the finding waits
//! in the [`ScanVerdict`] for the pipeline to answer the sandbox with.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::HeaderMap;
use http_body::Frame;

use crate::body::decode::Decoder;
use crate::body::{BoxError, Filter, Filtered, ProxyBody};
use crate::leak::scan::detect::{Detector, Found};
pub(crate) use crate::leak::scan::stream::Refuses;
use crate::leak::scan::stream::ScanStream;
use crate::locks::Unpoisoned;

/// What a body scan found that refuses the request, once it has.
#[derive(Clone, Default)]
pub(crate) struct ScanVerdict(Arc<Mutex<Option<Found>>>);

impl ScanVerdict {
    /// The finding, if the scan refused the body.
    pub(crate) fn take(&self) -> Option<Found> {
        self.0.lock().unpoisoned().take()
    }

    fn set(&self, found: Found) {
        *self.0.lock().unpoisoned() = Some(found);
    }
}

/// The scanned body.
pub(crate) type ScanBody = Filtered<Scan>;

/// Scanning as a body [`Filter`].
pub(crate) struct Scan {
    stream: ScanStream,
    verdict: ScanVerdict,
    decoder: Option<Decoder>,
}

impl ScanBody {
    /// Scan `inner` (undoing its content coding with `decoder`), refusing what `refuses` says.
    pub(crate) fn new(
        inner: ProxyBody,
        detector: Arc<Detector>,
        decoder: Option<Decoder>,
        refuses: Refuses,
        verdict: ScanVerdict,
    ) -> ScanBody {
        Filtered::with(
            inner,
            Scan {
                stream: ScanStream::new(detector, refuses),
                verdict,
                decoder,
            },
        )
    }
}

impl Scan {
    /// A finding that refuses the body: kept for the pipeline, and the error that ends the body.
    fn refused(&self, found: Found) -> BoxError {
        self.verdict.set(found);
        "the request body carries a placeholder or a secret it may not (credential_exfiltration)".into()
    }
}

/// Queue released chunks as data frames.
fn queue(released: Vec<Bytes>, out: &mut VecDeque<Frame<Bytes>>) {
    out.extend(released.into_iter().map(Frame::data));
}

impl Filter for Scan {
    /// Scan what `raw` adds; on a refusal, the error that ends the body. A chunk is sent whole once nothing
    /// that could be part of a finding is in it unscanned (a compressed body's chunks by what they decode to).
    fn data(&mut self, raw: Bytes, out: &mut VecDeque<Frame<Bytes>>) -> Result<(), BoxError> {
        let mut fresh = Vec::new();
        match &mut self.decoder {
            Some(decoder) => decoder.push(&raw, |decoded| fresh.extend_from_slice(&decoded))?,
            None => fresh.extend_from_slice(&raw),
        }
        let mut released = Vec::new();
        let scanned = self.stream.push_read(raw, &fresh, &mut released);
        queue(released, out);
        scanned.map_err(|found| self.refused(found))
    }

    fn end(&mut self, out: &mut VecDeque<Frame<Bytes>>) -> Result<(), BoxError> {
        if let Some(decoder) = self.decoder.take() {
            let rest = decoder.finish()?;
            self.stream.scan_rest(&rest).map_err(|found| self.refused(found))?;
        }
        let mut released = Vec::new();
        self.stream.finish(&mut released);
        queue(released, out);
        Ok(())
    }

    fn trailers(&mut self, trailers: HeaderMap) -> Result<HeaderMap, BoxError> {
        for value in trailers.values() {
            if let Err(found) = self.stream.check(value.as_bytes()) {
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
#[path = "body_tests.rs"]
mod tests;
