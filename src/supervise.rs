//! Background duties that must not end in silence. A duty that panics (the sweep that closes what expired or
//! was revoked, the budget flusher, the store's listener) is logged at ERROR, counted, and started again after a
//! pause that doubles up to 5 s; one that returns has finished on purpose (its state was dropped). And blocking
//! work a duty hands to tokio's blocking pool runs in place when the system cannot start a thread for it (a
//! fork flood by the jailed command's uid, a full pids cgroup), where `spawn_blocking` would panic.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

/// The longest pause between two starts of a duty that keeps panicking.
const MAX_PAUSE: Duration = Duration::from_secs(5);

/// Run the duty `make` builds on the runtime; each time it panics, log it, call `restarted` with its name, and
/// build and start it again. Ends when a run of the duty returns, or when the runtime shuts down.
pub(crate) fn forever<F, Fut>(name: &'static str, mut make: F, restarted: impl Fn(&'static str) + Send + 'static)
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    tokio::spawn(async move {
        let mut restarts: u32 = 0;
        loop {
            match tokio::spawn(make()).await {
                Ok(()) => return,
                Err(e) if e.is_panic() => {
                    restarts = restarts.saturating_add(1);
                    let payload = e.into_panic();
                    let why = payload
                        .downcast_ref::<&str>()
                        .map(|s| (*s).to_string())
                        .or_else(|| payload.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "no message".into());
                    tracing::error!(
                        task = name,
                        restarts,
                        "a background task of cordon panicked ({why}); it is started again"
                    );
                    restarted(name);
                    tokio::time::sleep(pause(restarts)).await;
                }
                // Cancelled: the runtime is shutting down.
                Err(_) => return,
            }
        }
    });
}

/// The pause before the `restarts`-th start: 100 ms, doubling, at most [`MAX_PAUSE`].
fn pause(restarts: u32) -> Duration {
    let doubled = Duration::from_millis(100).saturating_mul(1u32 << restarts.saturating_sub(1).min(6));
    doubled.min(MAX_PAUSE)
}

/// `f` on tokio's blocking pool; in place, on this worker, when the pool cannot start a thread for it (tokio's
/// `spawn_blocking` panics then). `None` if `f` itself panicked.
pub(crate) async fn blocking<T, F>(f: F) -> Option<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    // The closure is moved in whole or not at all: a spawn that fails hands it back through the slot.
    let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(f)));
    let moved = slot.clone();
    let spawned = std::panic::catch_unwind(AssertUnwindSafe(|| {
        tokio::task::spawn_blocking(move || {
            let f = moved.lock().unwrap_or_else(|p| p.into_inner()).take();
            f.map(|f| f())
        })
    }));
    match spawned {
        Ok(handle) => handle.await.ok().flatten(),
        Err(_) => {
            tracing::warn!("no thread could be started for blocking work; it runs in place");
            let f = slot.lock().unwrap_or_else(|p| p.into_inner()).take()?;
            std::panic::catch_unwind(AssertUnwindSafe(f)).ok()
        }
    }
}

#[cfg(test)]
#[path = "supervise_tests.rs"]
mod tests;
