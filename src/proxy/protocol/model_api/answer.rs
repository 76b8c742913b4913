//! A model API's answer on its way back, read as it passes (never held back, never changed): a stream of
//! server-sent events event by event (`sse-stream` parses what the tap hands it), any other answer kept whole up
//! to [`MOST_JSON`] and read when it ends. When the answer ends, fails or is dropped (a client that hangs up), what
//! it used is settled once: as the provider reported it, or estimated from what was delivered; priced, charged to
//! the budgets the call was admitted against, written into the record's `llm` section and counted in the metrics.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::Stream;
use http::header::{CONTENT_ENCODING, CONTENT_TYPE};
use http::response::Parts;
use http_body::{Body, Frame, SizeHint};
use serde_json::{Value, json};

use crate::body::{BoxError, ProxyBody};
use crate::error::ProxyError;
use crate::limits::model_ledger::{Admitted, Ledger};
use crate::llm::budget::units;
use crate::llm::prices::Price;
use crate::llm::usage::{StreamTally, Usage, estimate, of_answer};
use crate::locks::Unpoisoned;
use crate::metrics::models::ModelMetrics;
use crate::policy::model_api::Dialect;
use crate::policy::protocol::Completion;
use crate::proxy::protocol::contract::AnswerCheck;

/// The most of a JSON answer kept to read its usage; past it, the usage is estimated from the bytes delivered.
pub(super) const MOST_JSON: usize = 8 * 1024 * 1024;

/// What one call's answer is metered with.
pub(super) struct Metering {
    pub(super) dialect: Dialect,
    pub(super) model: String,
    pub(super) price: Option<Price>,
    /// The request's input tokens as estimated from its body, for an answer that reports none.
    pub(super) input_estimate: u64,
    /// The budget slots the call was admitted in (none without a budget).
    pub(super) admitted: Admitted,
    pub(super) ledger: Ledger,
    pub(super) metrics: Arc<ModelMetrics>,
    /// The sandbox (incarnation) whose spend it is.
    pub(super) incarnation: String,
    /// The record's `llm` section, completed when the answer ends.
    pub(super) completion: Completion,
}

#[async_trait::async_trait]
impl AnswerCheck for Metering {
    async fn answered(self: Box<Self>, parts: &mut Parts, body: ProxyBody) -> Result<ProxyBody, ProxyError> {
        let coded = parts
            .headers
            .get(CONTENT_ENCODING)
            .is_some_and(|c| !c.as_bytes().eq_ignore_ascii_case(b"identity"));
        let events = parts
            .headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/event-stream"));
        let reading = match (coded, events) {
            // A coded answer (the request asked for none) cannot be read: it is estimated from its bytes.
            (true, _) => Reading::Unreadable,
            (false, true) => Reading::events(self.dialect),
            (false, false) => Reading::Json(Vec::new()),
        };
        let status = parts.status.as_u16();
        Ok(crate::body::boxed(MeteredAnswer {
            inner: body,
            reading,
            delivered: 0,
            status,
            meter: Some(*self),
        }))
    }
}

/// How the answer is read.
enum Reading {
    /// Event by event: the bytes tapped off for the parser, the parser, and what its events said.
    Events {
        tap: Arc<Mutex<Tap>>,
        parser: Pin<Box<dyn Stream<Item = Result<sse_stream::Sse, sse_stream::Error>> + Send>>,
        tally: StreamTally,
    },
    /// Kept whole, to be read when it ends.
    Json(Vec<u8>),
    /// Not readable (coded, or larger than [`MOST_JSON`]).
    Unreadable,
}

/// The bytes handed to the event parser, and whether the answer ended.
#[derive(Default)]
struct Tap {
    chunks: VecDeque<Bytes>,
    ended: bool,
}

/// The event parser's source: what the tap holds, `Pending` when it holds nothing yet.
struct TapBody(Arc<Mutex<Tap>>);

impl Body for TapBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let mut tap = self.0.lock().unpoisoned();
        match tap.chunks.pop_front() {
            Some(chunk) => Poll::Ready(Some(Ok(Frame::data(chunk)))),
            None if tap.ended => Poll::Ready(None),
            // Polled only with a no-op waker, right after bytes were handed over: nothing waits on this.
            None => Poll::Pending,
        }
    }
}

impl Reading {
    fn events(dialect: Dialect) -> Reading {
        let tap = Arc::new(Mutex::new(Tap::default()));
        Reading::Events {
            parser: Box::pin(sse_stream::SseStream::new(TapBody(tap.clone()))),
            tap,
            tally: StreamTally::new(dialect),
        }
    }

    /// Take in one chunk of the answer.
    fn data(&mut self, chunk: &Bytes) {
        match self {
            Reading::Events { tap, .. } => {
                tap.lock().unpoisoned().chunks.push_back(chunk.clone());
                self.drain();
            }
            Reading::Json(kept) if kept.len() + chunk.len() <= MOST_JSON => kept.extend_from_slice(chunk),
            Reading::Json(_) => *self = Reading::Unreadable,
            Reading::Unreadable => {}
        }
    }

    /// Run the event parser over what it was handed, and tally each event.
    fn drain(&mut self) {
        let Reading::Events { parser, tally, .. } = self else {
            return;
        };
        let mut cx = Context::from_waker(std::task::Waker::noop());
        while let Poll::Ready(Some(event)) = parser.as_mut().poll_next(&mut cx) {
            match event {
                Ok(event) => {
                    if let Some(data) = &event.data {
                        tally.event(data);
                    }
                }
                // An event the parser cannot read says nothing; the rest of the stream is still read.
                Err(_) => continue,
            }
        }
    }

    /// The answer ended (`whole`: all of it came): what it used.
    fn finish(&mut self, whole: bool, delivered: u64, input_estimate: u64, status: u16, dialect: Dialect) -> Usage {
        if let Reading::Events { tap, .. } = self {
            tap.lock().unpoisoned().ended = true;
            self.drain();
        }
        let estimated = Usage {
            input: input_estimate,
            output: estimate(delivered),
            estimated: true,
            ..Usage::default()
        };
        match self {
            Reading::Events { tally, .. } => tally.finish(input_estimate),
            Reading::Json(kept) => match serde_json::from_slice::<Value>(kept)
                .ok()
                .and_then(|v| of_answer(dialect, &v))
            {
                Some(usage) => usage,
                // A provider's error is not billed; an answer cut short, or a success without usage, is estimated.
                None if whole && status >= 400 => Usage::default(),
                None => estimated,
            },
            Reading::Unreadable if status >= 400 => Usage::default(),
            Reading::Unreadable => estimated,
        }
    }
}

/// The answer's body, metered as it streams.
struct MeteredAnswer {
    inner: ProxyBody,
    reading: Reading,
    delivered: u64,
    status: u16,
    /// Until the answer is settled.
    meter: Option<Metering>,
}

impl MeteredAnswer {
    /// Settle what the answer used, once (`whole`: all of it came).
    fn settle(&mut self, whole: bool) {
        let Some(m) = self.meter.take() else { return };
        let usage = self
            .reading
            .finish(whole, self.delivered, m.input_estimate, self.status, m.dialect);
        let cost = m.price.map(|p| p.cost(&usage));
        let mut section = serde_json::to_value(usage).unwrap_or_else(|_| json!({}));
        if let (Some(cost), Value::Object(map)) = (cost, &mut section) {
            map.insert("cost".into(), json!(units(cost)));
        }
        // SECURITY: set before the record is emitted: the record's guard sits outside this body, and is dropped or
        // ended after it.
        m.completion.set(section);
        m.metrics.used(
            &m.incarnation,
            &m.model,
            usage.input,
            usage.cached_input,
            usage.output,
            cost,
        );
        let (tokens, cost) = (usage.tokens(), cost.unwrap_or(0));
        if !m.admitted.slots.is_empty() && (tokens > 0 || cost > 0) {
            // Charged whatever happens to the client: a runtime is always there while a body is polled or dropped.
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                let (ledger, admitted) = (m.ledger, m.admitted);
                handle.spawn(async move { ledger.0.charge(&admitted, tokens, cost).await });
            }
        }
    }
}

impl Body for MeteredAnswer {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.delivered += data.len() as u64;
                    this.reading.data(data);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.settle(false);
                Poll::Ready(Some(Err(e)))
            }
            Poll::Ready(None) => {
                this.settle(true);
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

impl Drop for MeteredAnswer {
    fn drop(&mut self) {
        // A client that hung up, or an answer never read to its end: what was delivered is counted.
        self.settle(false);
    }
}
