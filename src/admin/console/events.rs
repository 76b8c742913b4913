//! The console's live updates: one server-sent event stream per open page, saying which list changed
//! (`approvals` when a request is held or an ask ends, `sandboxes` when one is created, changed or revoked
//! through the admin API, and every [`TICK`] for what changes without an event: open connections, expiries,
//! and asks held by other replicas of a shared store). The page then fetches that list once: nothing polls.

use std::convert::Infallible;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use futures_util::stream;
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use tokio::sync::{OwnedSemaphorePermit, watch};

use crate::admin::response::Body;

/// How often the lists are said to have changed without an event.
const TICK: Duration = Duration::from_secs(15);

struct Watching {
    approvals: watch::Receiver<u64>,
    sandboxes: watch::Receiver<u64>,
    /// When the session ends: the stream says `signed-out` and ends.
    ends: SystemTime,
    /// Whether asks of other replicas are listed too (a shared store): they change without an event here.
    shared: bool,
    tick: tokio::time::Interval,
    first: bool,
    done: bool,
    /// Held for the stream's life (streams are bounded).
    _permit: OwnedSemaphorePermit,
}

/// The event stream's body.
pub(super) fn stream(
    approvals: watch::Receiver<u64>,
    sandboxes: watch::Receiver<u64>,
    ends: SystemTime,
    shared: bool,
    permit: OwnedSemaphorePermit,
) -> Body {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let watching = Watching {
        approvals,
        sandboxes,
        ends,
        shared,
        tick,
        first: true,
        done: false,
        _permit: permit,
    };
    let events = stream::unfold(watching, |mut w| async move {
        if w.done {
            return None;
        }
        let event = next(&mut w).await;
        Some((Ok::<_, Infallible>(Frame::data(Bytes::from(event))), w))
    });
    StreamBody::new(events).boxed_unsync()
}

/// The next event to send.
async fn next(w: &mut Watching) -> String {
    if w.first {
        w.first = false;
        // The first tick of an interval is at once: skip it, the page has just loaded its lists.
        w.tick.tick().await;
        return "retry: 3000\n: connected\n\n".to_owned();
    }
    let left = w.ends.duration_since(SystemTime::now()).unwrap_or_default();
    let name = tokio::select! {
        changed = w.approvals.changed() => match changed {
            Ok(()) => "approvals",
            Err(_) => { w.done = true; "signed-out" }
        },
        changed = w.sandboxes.changed() => match changed {
            Ok(()) => "sandboxes",
            Err(_) => { w.done = true; "signed-out" }
        },
        _ = w.tick.tick() => if w.shared { "changed" } else { "sandboxes" },
        () = tokio::time::sleep(left) => { w.done = true; "signed-out" }
    };
    format!("event: {name}\ndata: {name}\n\n")
}
