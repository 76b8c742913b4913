//! Request bodies read whole up to a limit: where a placeholder may be swapped in them, and to show an approver
//! the whole of what they approve.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;

use crate::body::{BoxError, ProxyBody};

/// Bodies up to this size may have placeholders swapped in them (413 beyond); every body is scanned.
pub(crate) const MAX_SCANNED_BODY: usize = 1024 * 1024;

/// A request body after an attempt to read it whole.
pub(crate) enum Read {
    /// All of it (and its trailers), within the limit.
    Whole(Bytes, Option<HeaderMap>),
    /// Larger than the limit (what was read is dropped).
    TooLarge,
}

/// Read `body` whole if it fits in `limit` bytes.
pub(crate) async fn read(mut body: ProxyBody, limit: usize) -> Result<Read, BoxError> {
    let mut buf = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame?;
        match frame.into_data() {
            Ok(data) => {
                buf.extend_from_slice(&data);
                if buf.len() > limit {
                    return Ok(Read::TooLarge);
                }
            }
            Err(frame) => {
                // Trailers end the body.
                return Ok(Read::Whole(buf.freeze(), frame.into_trailers().ok()));
            }
        }
    }
    Ok(Read::Whole(buf.freeze(), None))
}

/// A whole body again, with its trailers.
pub(crate) fn whole(data: Bytes, trailers: Option<HeaderMap>) -> ProxyBody {
    let frames = [Some(Frame::data(data)), trailers.map(Frame::trailers)];
    Frames {
        frames: frames.into_iter().flatten().collect(),
    }
    .boxed_unsync()
}

struct Frames {
    frames: std::collections::VecDeque<Frame<Bytes>>,
}

impl Body for Frames {
    type Data = Bytes;
    type Error = BoxError;
    fn poll_frame(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        Poll::Ready(self.frames.pop_front().map(Ok))
    }
    fn is_end_stream(&self) -> bool {
        self.frames.is_empty()
    }
    fn size_hint(&self) -> SizeHint {
        let n: u64 = self
            .frames
            .iter()
            .filter_map(|f| f.data_ref())
            .map(|d| d.len() as u64)
            .sum();
        SizeHint::with_exact(n)
    }
}

/// `data` with every occurrence of `from` replaced by `to`.
pub(crate) fn replace(data: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    if from.is_empty() {
        return data.to_vec();
    }
    let mut out = Vec::with_capacity(data.len());
    let mut i = 0;
    while i < data.len() {
        if data[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(data[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
#[path = "read_tests.rs"]
mod tests;
