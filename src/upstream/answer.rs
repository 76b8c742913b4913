//! The upstream's answer body on its way to the client, read to its end even when the client stops first.
//!
//! hyper's HTTP/1.1 server stops reading a response body once it has written every byte its Content-Length
//! promised, and drops it. Over HTTP/2 the upstream's END_STREAM often comes a moment later, in a frame of its
//! own (nginx sends it so), and dropping the stream before it has arrived resets it (RST_STREAM CANCEL). The
//! frames that then arrive on a stream h2 no longer keeps count against its limit of local resets per
//! connection; past it, h2 ends the connection (GOAWAY, ENHANCE_YOUR_CALM, `too_many_internal_resets`) and
//! every request on it fails with a 502. Under load that was 1 to 4% of streamed answers.
//!
//! So a body dropped with nothing left but its end is read on to that end in a task of its own, for a few
//! seconds at most; a body dropped with data still to come is reset as before (the client went away).

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;

/// How long a dropped answer is read on for its end.
const END_WAIT: Duration = Duration::from_secs(5);

/// The upstream's answer body: [`Incoming`], read to its end when dropped with only the end left.
pub(crate) struct AnswerBody {
    /// The body; `None` once it has ended.
    inner: Option<Incoming>,
}

impl AnswerBody {
    pub(crate) fn new(inner: Incoming) -> AnswerBody {
        AnswerBody { inner: Some(inner) }
    }
}

impl Body for AnswerBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let polled = Pin::new(inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None) | Poll::Ready(Some(Err(_)))) {
            self.inner = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(Incoming::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), Incoming::size_hint)
    }
}

impl Drop for AnswerBody {
    fn drop(&mut self) {
        let Some(body) = self.inner.take() else {
            return;
        };
        // Every byte the answer's length promised has been read: only the end is still to come.
        if body.is_end_stream() || body.size_hint().exact() != Some(0) {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = tokio::time::timeout(END_WAIT, body.collect()).await;
            });
        }
    }
}
