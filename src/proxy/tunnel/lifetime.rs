//! Watching a tunnel: bytes each way (for the audit record and the sandbox's byte budget), the last time
//! anything moved (for the idle timeout), and the tunnel's age (for its maximum lifetime).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::TunnelEnd;
use crate::limits::{Meter, OpenGuard};
use crate::session::leases::Lease;

/// What a watched stream shares with whoever watches it.
pub(crate) struct Activity {
    started: Instant,
    /// Milliseconds after `started` when the watchdog last saw the byte count change.
    last: AtomicU64,
    /// The byte count (both ways) the watchdog saw then.
    seen: AtomicU64,
    /// Bytes from the client.
    pub(crate) up: Arc<AtomicU64>,
    /// Bytes to the client.
    pub(crate) down: Arc<AtomicU64>,
    over_budget: AtomicBool,
}

impl Activity {
    /// Fresh, adding to these counters (the audit record's).
    pub(crate) fn new(up: Arc<AtomicU64>, down: Arc<AtomicU64>) -> Arc<Activity> {
        Arc::new(Activity {
            started: Instant::now(),
            last: AtomicU64::new(0),
            seen: AtomicU64::new(0),
            up,
            down,
            over_budget: AtomicBool::new(false),
        })
    }

    /// How long nothing has moved, as seen from the calls of this method (the watchdog's ticks): moving bytes
    /// costs two counter additions and no clock read, and idleness is known to within one tick.
    pub(crate) fn idle_for(&self) -> Duration {
        let now = self.started.elapsed();
        let total = self.up.load(Ordering::Relaxed) + self.down.load(Ordering::Relaxed);
        if self.seen.swap(total, Ordering::Relaxed) != total {
            let ms = u64::try_from(now.as_millis()).unwrap_or(u64::MAX);
            self.last.store(ms, Ordering::Relaxed);
        }
        now.saturating_sub(Duration::from_millis(self.last.load(Ordering::Relaxed)))
    }

    /// Whether the byte budget stopped it.
    pub(crate) fn over_budget(&self) -> bool {
        self.over_budget.load(Ordering::Relaxed)
    }
}

/// Resolves when the tunnel has been idle for `idle` or open for `max`.
pub(crate) async fn watchdog(activity: Arc<Activity>, idle: Duration, max: Duration) -> TunnelEnd {
    let tick = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
    loop {
        tokio::time::sleep(tick).await;
        if activity.started.elapsed() >= max {
            return TunnelEnd::MaxLifetime(max);
        }
        if activity.idle_for() >= idle {
            return TunnelEnd::Idle(idle);
        }
    }
}

/// Everything that can end a tunnel besides its two ends: its sandbox or destination losing access, the
/// drain deadline, idleness, age and the byte budget. Holds the tunnel's registration and open slot.
pub(crate) struct Stop {
    lease: Lease,
    hard_stop: CancellationToken,
    _open: OpenGuard,
    activity: Arc<Activity>,
    meter: Option<Arc<dyn Meter>>,
    idle: Duration,
    max: Duration,
}

impl Stop {
    /// A tunnel registered as `lease`, holding `open` (its slot under the open caps), counting into
    /// `activity` and `meter`, bounded by the `idle` and `max` timeouts.
    pub(crate) fn new(
        lease: Lease,
        hard_stop: CancellationToken,
        open: OpenGuard,
        activity: Arc<Activity>,
        meter: Option<Arc<dyn Meter>>,
        (idle, max): (Duration, Duration),
    ) -> Stop {
        Stop {
            lease,
            hard_stop,
            _open: open,
            activity,
            meter,
            idle,
            max,
        }
    }

    /// The client stream, watched.
    pub(crate) fn watch<S>(&self, io: S) -> Watched<S> {
        Watched::new(io, self.activity.clone(), self.meter.clone())
    }

    /// Whether the sandbox's byte budget ended it.
    pub(crate) fn over_budget(&self) -> bool {
        self.activity.over_budget()
    }

    /// Count bytes moved without a [`Watched`] stream (a relay by splice(2)): `up` from the client, `down` to
    /// it. An error once the sandbox's byte budget is spent.
    pub(crate) fn count(&self, up: u64, down: u64) -> io::Result<()> {
        account(&self.activity, self.meter.as_ref(), up, down)
    }

    /// Resolves when the tunnel must end, with why (for its audit record).
    pub(crate) async fn ended(&self) -> TunnelEnd {
        tokio::select! {
            () = self.lease.token().cancelled() => {
                if self.hard_stop.is_cancelled() {
                    TunnelEnd::Shutdown
                } else {
                    TunnelEnd::Closed
                }
            }
            ended = watchdog(self.activity.clone(), self.idle, self.max) => ended,
        }
    }
}

/// A client stream whose bytes are counted, timed and metered.
pub(crate) struct Watched<S> {
    inner: S,
    activity: Arc<Activity>,
    meter: Option<Arc<dyn Meter>>,
}

impl<S> Watched<S> {
    /// Watch `inner`.
    pub(crate) fn new(inner: S, activity: Arc<Activity>, meter: Option<Arc<dyn Meter>>) -> Watched<S> {
        Watched { inner, activity, meter }
    }

    /// The stream inside (its counts stay where they were added).
    pub(crate) fn into_inner(self) -> S {
        self.inner
    }

    fn moved(&self, up: u64, down: u64) -> io::Result<()> {
        account(&self.activity, self.meter.as_ref(), up, down)
    }
}

/// Add bytes to a tunnel's counts and its sandbox's byte budget; an error once the budget is spent.
fn account(activity: &Activity, meter: Option<&Arc<dyn Meter>>, up: u64, down: u64) -> io::Result<()> {
    activity.up.fetch_add(up, Ordering::Relaxed);
    activity.down.fetch_add(down, Ordering::Relaxed);
    if let Some(m) = meter
        && !m.add(up, down)
    {
        activity.over_budget.store(true, Ordering::Relaxed);
        // SECURITY: a sandbox over its byte budget moves no more bytes through this tunnel.
        return Err(io::Error::other("the sandbox's byte budget is spent"));
    }
    Ok(())
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if self.activity.over_budget() {
            return Poll::Ready(Err(io::Error::other("the sandbox's byte budget is spent")));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            let n = (buf.filled().len() - before) as u64;
            if n > 0 {
                self.moved(n, 0)?;
            }
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if self.activity.over_budget() {
            return Poll::Ready(Err(io::Error::other("the sandbox's byte budget is spent")));
        }
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &polled
            && *n > 0
        {
            self.moved(0, *n as u64)?;
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
#[path = "lifetime_tests.rs"]
mod tests;
