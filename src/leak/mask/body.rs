//! A response body on its way to the sandbox with every secret masked as it streams: data frames through a
//! [`MaskStream`] (every coding the upstream applied undone first, [`crate::body::codings`]; a body compressed by
//! its media type compressed again after), trailers masked like headers ([`crate::leak::mask::envelope`]).

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use http::HeaderMap;
use http_body::Frame;

use crate::body::codings::Codings;
use crate::body::decode::DecodeError;
use crate::body::decode_chain::Decoding;
use crate::body::encode::Encoder;
use crate::body::{BoxError, Filter, Filtered, ProxyBody};
use crate::leak::mask::masker::{MaskStream, Masker};

/// How many decoded bytes one step hands on before the body is read again (what a decompression bomb can
/// make cordon queue at once is about this, plus one step of one decoder).
const DECODED_PER_STEP: usize = 256 * 1024;

/// The masked body.
pub(crate) type MaskedBody = Filtered<Mask>;

/// Masking as a body [`Filter`].
pub(crate) struct Mask {
    decoding: Option<Decoding>,
    stream: MaskStream,
    masker: Arc<Masker>,
    /// Compresses the masked bytes again (a body compressed by its media type).
    encoder: Option<Encoder>,
    /// The inner body's data has ended.
    ended: bool,
    /// What the mask stream and the encoder held has gone out.
    finished: bool,
    /// Whether the encoder was given any bytes.
    encoded: bool,
}

impl MaskedBody {
    /// Mask `inner`, undoing `codings` first (and compressing the result again in the media type's coding);
    /// with no codings, the body is masked as it is.
    pub(crate) fn decoded(inner: ProxyBody, masker: Arc<Masker>, codings: &Codings) -> Result<MaskedBody, DecodeError> {
        let decoding = (!codings.is_empty())
            .then(|| codings.decoders().map(Decoding::new))
            .transpose()?;
        let encoder = codings
            .media
            .map(|coding| Encoder::for_coding(coding).map_err(|source| DecodeError::Corrupt { coding, source }))
            .transpose()?;
        Ok(Filtered::with(inner, Mask::with(masker, decoding, encoder)))
    }
}

impl Mask {
    fn with(masker: Arc<Masker>, decoding: Option<Decoding>, encoder: Option<Encoder>) -> Mask {
        Mask {
            decoding,
            stream: masker.stream(),
            masker,
            encoder,
            ended: false,
            finished: false,
            encoded: false,
        }
    }

    /// Queue `bytes` (masked, and compressed again if need be) if there are any.
    fn emit(&mut self, bytes: Bytes, out: &mut VecDeque<Frame<Bytes>>) -> Result<(), BoxError> {
        let bytes = match &mut self.encoder {
            Some(e) if !bytes.is_empty() => {
                self.encoded = true;
                Bytes::from(e.push(&bytes)?)
            }
            _ => bytes,
        };
        if !bytes.is_empty() {
            out.push_back(Frame::data(bytes));
        }
        Ok(())
    }

    /// Push decoded `data` through the mask stream, queueing what it lets go.
    fn masked(&mut self, data: Bytes, out: &mut VecDeque<Frame<Bytes>>) -> Result<(), BoxError> {
        let masked = self.stream.push(data);
        self.emit(masked, out)
    }
}

impl Filter for Mask {
    fn data(&mut self, data: Bytes, out: &mut VecDeque<Frame<Bytes>>) -> Result<(), BoxError> {
        match &mut self.decoding {
            Some(decoding) => {
                decoding.push(&data);
                self.resume(out)
            }
            None => self.masked(data, out),
        }
    }

    /// The end of the data: what the decoders, the mask stream and the encoder still hold goes out over the
    /// next steps.
    fn end(&mut self, out: &mut VecDeque<Frame<Bytes>>) -> Result<(), BoxError> {
        self.ended = true;
        if let Some(decoding) = &mut self.decoding {
            decoding.end();
        }
        self.resume(out)
    }

    fn held(&self) -> bool {
        self.decoding.as_ref().is_some_and(Decoding::held) || (self.ended && !self.finished)
    }

    /// Decode a bounded piece; once everything is decoded after the end, finish the mask stream and encoder.
    fn resume(&mut self, out: &mut VecDeque<Frame<Bytes>>) -> Result<(), BoxError> {
        if let Some(decoding) = &mut self.decoding {
            let mut decoded = Vec::new();
            decoding.pump(DECODED_PER_STEP, |d| decoded.push(Bytes::from(d)))?;
            for d in decoded {
                self.masked(d, out)?;
            }
            if decoding_held(&self.decoding) {
                return Ok(());
            }
        }
        if self.ended && !self.finished {
            self.finished = true;
            let rest = self.stream.finish();
            self.emit(rest, out)?;
            // An encoder that was given nothing (a HEAD, 204 or 304 answer) adds nothing: no body, no header.
            if let Some(encoder) = self.encoder.take().filter(|_| self.encoded) {
                let tail = encoder.finish()?;
                if !tail.is_empty() {
                    out.push_back(Frame::data(Bytes::from(tail)));
                }
            }
        }
        Ok(())
    }

    /// Trailers are masked like headers.
    fn trailers(&mut self, mut trailers: HeaderMap) -> Result<HeaderMap, BoxError> {
        crate::leak::mask::envelope::mask_fields(&self.masker, &mut trailers);
        Ok(trailers)
    }
}

/// Whether a decoding still holds something.
fn decoding_held(decoding: &Option<Decoding>) -> bool {
    decoding.as_ref().is_some_and(Decoding::held)
}

#[cfg(test)]
#[path = "body_tests.rs"]
mod tests;
