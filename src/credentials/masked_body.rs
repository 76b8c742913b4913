//! A response body on its way to the sandbox with every secret masked as it streams: data frames through a
//! [`MaskStream`] (decompressed first when the upstream compressed it), trailers masked like headers.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use http::HeaderMap;
use http_body::Frame;

use super::decode::Decoder;
use super::mask::{MaskStream, Masker};
use crate::body::{BoxError, Filter, Filtered, ProxyBody};

/// The masked body.
pub(crate) type MaskedBody = Filtered<Mask>;

/// Masking as a body [`Filter`].
pub(crate) struct Mask {
    decoder: Option<Decoder>,
    stream: MaskStream,
    masker: Arc<Masker>,
}

impl MaskedBody {
    /// Mask `inner`, undoing its content coding with `decoder` first.
    pub(crate) fn new(inner: ProxyBody, masker: Arc<Masker>, decoder: Option<Decoder>) -> MaskedBody {
        Filtered::with(
            inner,
            Mask {
                decoder,
                stream: masker.stream(),
                masker,
            },
        )
    }
}

/// Push `data` through the mask stream, queueing what it lets go.
fn push(stream: &mut MaskStream, data: Bytes, out: &mut VecDeque<Frame<Bytes>>) {
    let masked = stream.push(data);
    if !masked.is_empty() {
        out.push_back(Frame::data(masked));
    }
}

impl Filter for Mask {
    fn data(&mut self, data: Bytes, out: &mut VecDeque<Frame<Bytes>>) -> Result<(), BoxError> {
        match &mut self.decoder {
            Some(decoder) => {
                let stream = &mut self.stream;
                decoder.push(&data, |decoded| push(stream, Bytes::from(decoded), out))?;
            }
            None => push(&mut self.stream, data, out),
        }
        Ok(())
    }

    /// The end of the data: what the decoder and the mask stream still hold.
    fn end(&mut self, out: &mut VecDeque<Frame<Bytes>>) -> Result<(), BoxError> {
        if let Some(decoder) = self.decoder.take() {
            let rest = decoder.finish()?;
            push(&mut self.stream, Bytes::from(rest), out);
        }
        let rest = self.stream.finish();
        if !rest.is_empty() {
            out.push_back(Frame::data(rest));
        }
        Ok(())
    }

    /// Trailers are masked like headers.
    fn trailers(&mut self, mut trailers: HeaderMap) -> Result<HeaderMap, BoxError> {
        self.masker.mask_headers(&mut trailers);
        Ok(trailers)
    }
}

#[cfg(test)]
#[path = "masked_body_tests.rs"]
mod tests;
