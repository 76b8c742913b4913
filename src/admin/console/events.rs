//! The console's live updates: one server-sent event stream per open page, saying which list changed
//! (`approvals` when a request is held or an ask ends, `sandboxes` when one is created, changed or revoked
//! through the admin API, and every [`TICK`] for what changes without an event: open connections, expiries,
//! and asks held by other replicas of a shared store). The page then fetches that list once: nothing polls.
//!
//! A stream looks at its session again every [`RECHECK`]: signed out, expired, or left with no role by a reload
//! (its token removed, its groups no longer giving one), it says `signed-out` and ends; with other roles than
//! before, it says `changed`, and the page fetches its lists again (their buttons follow the roles).
//! Streams are bounded in all and per principal ([`Streams`]), so one person's many pages cannot take every
//! stream from the others.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use futures_util::stream;
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

use crate::admin::response::Body;
use crate::locks::Unpoisoned;
use crate::principal::Roles;

/// How often the lists are said to have changed without an event.
const TICK: Duration = Duration::from_secs(15);
/// How often a stream looks at its session again.
const RECHECK: Duration = Duration::from_secs(1);
/// Event streams open at once (one per open page).
const MOST_STREAMS: usize = 256;
/// Event streams one principal may hold at once (a browser holds at most six connections to one origin: a
/// person's pages stay usable, and most streams stay for everyone else).
pub(super) const MOST_STREAMS_EACH: usize = 4;

/// The streams open, in all and per principal.
pub(super) struct Streams {
    all: Arc<Semaphore>,
    each: Arc<Mutex<HashMap<String, usize>>>,
}

/// One stream's place among the open ones, given back when the stream ends.
pub(super) struct StreamSlot {
    _all: OwnedSemaphorePermit,
    each: Arc<Mutex<HashMap<String, usize>>>,
    whose: String,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut each = self.each.lock().unpoisoned();
        if let Some(n) = each.get_mut(&self.whose) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                each.remove(&self.whose);
            }
        }
    }
}

/// Why a stream was not opened.
pub(super) enum Full {
    /// This principal holds [`MOST_STREAMS_EACH`] already.
    Yours,
    /// [`MOST_STREAMS`] are open.
    Everyone,
}

impl Streams {
    pub(super) fn new() -> Streams {
        Streams {
            all: Arc::new(Semaphore::new(MOST_STREAMS)),
            each: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// A place for one more stream of the principal `whose`, if there is one.
    pub(super) fn take(&self, whose: &str) -> Result<StreamSlot, Full> {
        let mut each = self.each.lock().unpoisoned();
        let n = each.entry(whose.to_owned()).or_default();
        if *n >= MOST_STREAMS_EACH {
            return Err(Full::Yours);
        }
        let all = self.all.clone().try_acquire_owned().map_err(|_| Full::Everyone)?;
        *n += 1;
        Ok(StreamSlot {
            _all: all,
            each: self.each.clone(),
            whose: whose.to_owned(),
        })
    }
}

/// What a stream watches.
pub(super) struct StreamWatch {
    pub(super) approvals: watch::Receiver<u64>,
    pub(super) sandboxes: watch::Receiver<u64>,
    /// When the session ends: the stream says `signed-out` and ends.
    pub(super) ends: SystemTime,
    /// Whether asks of other replicas are listed too (a shared store): they change without an event here.
    pub(super) shared: bool,
    /// The session's roles now; `None` once it is over (signed out, or no role left).
    pub(super) alive: Box<dyn Fn() -> Option<Roles> + Send + Sync>,
    /// The roles the page was made for.
    pub(super) roles: Roles,
    /// Held for the stream's life (streams are bounded).
    pub(super) _held: StreamSlot,
}

struct Watching {
    w: StreamWatch,
    tick: tokio::time::Interval,
    recheck: tokio::time::Interval,
    first: bool,
    done: bool,
}

/// The event stream's body.
pub(super) fn stream(watched: StreamWatch) -> Body {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut recheck = tokio::time::interval(RECHECK);
    recheck.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let watching = Watching {
        w: watched,
        tick,
        recheck,
        first: true,
        done: false,
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
        // The first ticks of an interval are at once: skip them, the page has just loaded its lists.
        w.tick.tick().await;
        w.recheck.tick().await;
        return "retry: 3000\n: connected\n\n".to_owned();
    }
    let name = loop {
        let left = w.w.ends.duration_since(SystemTime::now()).unwrap_or_default();
        let name = tokio::select! {
            changed = w.w.approvals.changed() => match changed {
                Ok(()) => "approvals",
                Err(_) => "signed-out",
            },
            changed = w.w.sandboxes.changed() => match changed {
                Ok(()) => "sandboxes",
                Err(_) => "signed-out",
            },
            _ = w.tick.tick() => if w.w.shared { "changed" } else { "sandboxes" },
            _ = w.recheck.tick() => "",
            () = tokio::time::sleep(left) => "signed-out",
        };
        // Whatever woke the stream, the session is looked at first: nothing is said to a session that is over.
        match (w.w.alive)() {
            None => break "signed-out",
            Some(roles) if roles != w.w.roles => {
                w.w.roles = roles;
                break "changed";
            }
            Some(_) if name.is_empty() => {}
            Some(_) => break name,
        }
    };
    if name == "signed-out" {
        w.done = true;
    }
    format!("event: {name}\ndata: {name}\n\n")
}
