//! Bodies: the one body type cordon serves and forwards, a wrapper that counts bytes as they stream, and
//! bodies read whole up to a limit ([`read`]); and the content codings a body may carry, undone as the bytes
//! arrive and done again ([`codings`], [`decode`], [`decode_chain`], [`encode`], [`aws_chunked`]), so that what
//! is scanned or masked is what the receiver reads.

pub(crate) mod aws_chunked;
pub(crate) mod codings;
pub(crate) mod decode;
pub(crate) mod decode_chain;
pub(crate) mod encode;
pub(crate) mod json;
pub(crate) mod read;

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full};

/// Boxed error for bodies.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The body of every response cordon sends and every request it forwards.
pub(crate) type ProxyBody = UnsyncBoxBody<Bytes, BoxError>;

/// A complete body.
pub(crate) fn full(text: impl Into<Bytes>) -> ProxyBody {
    Full::new(text.into()).map_err(|never| match never {}).boxed_unsync()
}

/// An empty body.
pub(crate) fn empty() -> ProxyBody {
    Empty::new().map_err(|never| match never {}).boxed_unsync()
}

/// Streams an inner body unchanged, adding the length of each data frame to a shared counter, and
/// keeping `T` (e.g. an audit guard) alive until the body is finished or dropped.
pub(crate) struct Counted<B, T> {
    inner: B,
    counter: Arc<AtomicU64>,
    keep: Option<T>,
    /// Also told of each frame: (meter, true for bytes from the client).
    meter: Option<(Arc<dyn crate::limits::Meter>, bool)>,
}

impl<B, T> Counted<B, T> {
    /// Wrap `inner`; `keep` is dropped when the body ends.
    pub(crate) fn new(inner: B, counter: Arc<AtomicU64>, keep: Option<T>) -> Self {
        Counted {
            inner,
            counter,
            keep,
            meter: None,
        }
    }

    /// Also count the bytes against a budget (`up`: from the client); over it, the body ends in an error.
    pub(crate) fn metered(mut self, meter: Option<Arc<dyn crate::limits::Meter>>, up: bool) -> Self {
        self.meter = meter.map(|m| (m, up));
        self
    }
}

impl<B, T> Body for Counted<B, T>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
    T: Unpin,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    let n = data.len() as u64;
                    this.counter.fetch_add(n, Ordering::Relaxed);
                    if let Some((meter, up)) = &this.meter {
                        let (u, d) = if *up { (n, 0) } else { (0, n) };
                        if !meter.add(u, d) {
                            this.keep.take();
                            return Poll::Ready(Some(Err("the sandbox's byte budget is spent".into())));
                        }
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.keep.take();
                Poll::Ready(Some(Err(e.into())))
            }
            Poll::Ready(None) => {
                // The end of the body is the end of the exchange: let the guard report now, not whenever
                // hyper gets round to dropping the body.
                this.keep.take();
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Box any body into a [`ProxyBody`].
pub(crate) fn boxed<B>(body: B) -> ProxyBody
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    body.map_err(Into::into).boxed_unsync()
}

/// What a [`Filtered`] body does to its inner body's frames as they stream.
pub(crate) trait Filter {
    /// Take in one data frame; push onto `out` what may go on now.
    fn data(&mut self, data: Bytes, out: &mut VecDeque<Frame<Bytes>>) -> Result<(), BoxError>;
    /// The data has ended (trailers follow, or nothing): push whatever is still held.
    fn end(&mut self, out: &mut VecDeque<Frame<Bytes>>) -> Result<(), BoxError>;
    /// The trailers, after [`Filter::end`]: what goes on in their place.
    fn trailers(&mut self, trailers: HeaderMap) -> Result<HeaderMap, BoxError> {
        Ok(trailers)
    }
    /// Whether the filtered body is as long as the inner one (then its size hint is kept).
    fn keeps_length(&self) -> bool {
        false
    }
    /// Whether the filter still holds input it has not turned into frames yet (a filter that expands its
    /// input, like a decompressor, hands it out a bounded piece per [`Filter::resume`]).
    fn held(&self) -> bool {
        false
    }
    /// Turn a bounded piece of what is held into frames; called while [`Filter::held`], before the inner
    /// body is read again, so what is queued stays bounded however far the input expands.
    fn resume(&mut self, _out: &mut VecDeque<Frame<Bytes>>) -> Result<(), BoxError> {
        Ok(())
    }
}

/// A body passed through a [`Filter`]: the one streaming loop that masking and scanning share. An error from
/// the filter ends the body with it.
pub(crate) struct Filtered<F> {
    inner: ProxyBody,
    filter: F,
    /// Frames ready to hand out.
    ready: VecDeque<Frame<Bytes>>,
    /// The inner body's trailers, kept until the filter has handed out everything it held.
    trailers: Option<HeaderMap>,
    /// The inner body has ended (or failed).
    done: bool,
    /// The body has ended in an error: nothing more comes out.
    failed: bool,
}

impl<F: Filter> Filtered<F> {
    /// Pass `inner` through `filter`.
    pub(crate) fn with(inner: ProxyBody, filter: F) -> Self {
        Filtered {
            inner,
            filter,
            ready: VecDeque::new(),
            trailers: None,
            done: false,
            failed: false,
        }
    }
}

impl<F: Filter + Unpin> Body for Filtered<F> {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        loop {
            if let Some(frame) = this.ready.pop_front() {
                return Poll::Ready(Some(Ok(frame)));
            }
            let step = if this.failed {
                return Poll::Ready(None);
            } else if this.filter.held() {
                this.filter.resume(&mut this.ready)
            } else if let Some(trailers) = this.trailers.take() {
                this.filter
                    .trailers(trailers)
                    .map(|t| this.ready.push_back(Frame::trailers(t)))
            } else if this.done {
                return Poll::Ready(None);
            } else {
                match Pin::new(&mut this.inner).poll_frame(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Some(Err(e))) => {
                        this.failed = true;
                        return Poll::Ready(Some(Err(e)));
                    }
                    Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                        Ok(data) => this.filter.data(data, &mut this.ready),
                        Err(frame) => {
                            // Trailers end the data: what is held goes first, then the trailers.
                            this.done = true;
                            this.trailers = frame.into_trailers().ok();
                            this.filter.end(&mut this.ready)
                        }
                    },
                    Poll::Ready(None) => {
                        this.done = true;
                        this.filter.end(&mut this.ready)
                    }
                }
            };
            if let Err(e) = step {
                this.failed = true;
                this.ready.clear();
                this.trailers = None;
                return Poll::Ready(Some(Err(e)));
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.failed || (self.done && self.ready.is_empty() && self.trailers.is_none() && !self.filter.held())
    }

    fn size_hint(&self) -> SizeHint {
        if self.filter.keeps_length() {
            self.inner.size_hint()
        } else {
            SizeHint::default()
        }
    }
}
