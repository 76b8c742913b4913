//! A response body on its way to the sandbox with every secret masked as it streams: data frames through a
//! [`MaskStream`] (decompressed first when the upstream compressed it), trailers masked like headers.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use super::decode::Decoder;
use super::mask::{MaskStream, Masker};
use crate::body::{BoxError, ProxyBody};

/// The masked body.
pub(crate) struct MaskedBody {
    inner: ProxyBody,
    decoder: Option<Decoder>,
    stream: MaskStream,
    masker: Arc<Masker>,
    /// Frames ready to hand out.
    ready: VecDeque<Frame<Bytes>>,
    done: bool,
}

impl MaskedBody {
    /// Mask `inner`, undoing its content coding with `decoder` first.
    pub(crate) fn new(inner: ProxyBody, masker: Arc<Masker>, decoder: Option<Decoder>) -> MaskedBody {
        MaskedBody {
            inner,
            decoder,
            stream: masker.stream(),
            masker,
            ready: VecDeque::new(),
            done: false,
        }
    }

    fn data(&mut self, data: Bytes) -> Result<(), BoxError> {
        match &mut self.decoder {
            Some(decoder) => {
                let (stream, ready) = (&mut self.stream, &mut self.ready);
                decoder.push(&data, |decoded| {
                    let out = stream.push(Bytes::from(decoded));
                    if !out.is_empty() {
                        ready.push_back(Frame::data(out));
                    }
                })?;
            }
            None => {
                let out = self.stream.push(data);
                if !out.is_empty() {
                    self.ready.push_back(Frame::data(out));
                }
            }
        }
        Ok(())
    }

    /// The end of the data: what the decoder and the mask stream still hold.
    fn flush(&mut self) -> Result<(), BoxError> {
        if let Some(decoder) = self.decoder.take() {
            let rest = decoder.finish()?;
            let out = self.stream.push(Bytes::from(rest));
            if !out.is_empty() {
                self.ready.push_back(Frame::data(out));
            }
        }
        let rest = self.stream.finish();
        if !rest.is_empty() {
            self.ready.push_back(Frame::data(rest));
        }
        Ok(())
    }
}

impl Body for MaskedBody {
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
                    Ok(data) => this.data(data)?,
                    Err(frame) => {
                        // Trailers end the data: flush it first, then the trailers, masked like headers.
                        this.flush()?;
                        if let Ok(mut trailers) = frame.into_trailers() {
                            this.masker.mask_headers(&mut trailers);
                            this.ready.push_back(Frame::trailers(trailers));
                        }
                    }
                },
                Poll::Ready(None) => {
                    this.flush()?;
                    this.done = true;
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.ready.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        // Masking may change the length.
        SizeHint::default()
    }
}

#[cfg(test)]
#[path = "masked_body_tests.rs"]
mod tests;
