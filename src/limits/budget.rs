//! Byte budgets (upload and download) per sandbox per fixed window.
//!
//! A sandbox's window starts at its first counted byte and lasts the configured window; the first
//! byte counted after it ends starts a new window from zero. Counting is one lock and one hash
//! lookup; it allocates only for a sandbox's first bytes of a window.

use crate::names::Incarnation;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use governor::clock::Reference;

use super::LimitRefusal;
use super::rate::whole_seconds;

use crate::locks::Unpoisoned;

/// The bytes one sandbox moved in its current window.
#[derive(Debug, Clone, Copy)]
struct Window<I> {
    /// When the window started (its first counted byte).
    start: I,
    /// Bytes sent upstream (request bodies, bytes written into tunnels).
    up: u64,
    /// Bytes received from upstream (response bodies, bytes read from tunnels).
    down: u64,
}

/// Byte counts per sandbox, checked against the configured budgets.
#[derive(Debug)]
pub(super) struct Budgets<I> {
    /// Length of one window.
    window: Duration,
    /// Upload budget per window; `None` = unlimited.
    upload: Option<u64>,
    /// Download budget per window; `None` = unlimited.
    download: Option<u64>,
    /// The current window of each sandbox that moved bytes.
    windows: Mutex<HashMap<Incarnation, Window<I>>>,
}

impl<I: Reference> Budgets<I> {
    /// Budgets of `upload` and `download` bytes per `window`.
    pub(super) fn new(window: Duration, upload: Option<u64>, download: Option<u64>) -> Self {
        Self {
            window,
            upload,
            download,
            windows: Mutex::new(HashMap::new()),
        }
    }

    /// Lock the windows; a poisoned lock is still usable (each update is a plain add).
    fn lock(&self) -> MutexGuard<'_, HashMap<Incarnation, Window<I>>> {
        self.windows.lock().unpoisoned()
    }

    /// Whether `window` is over at `now`.
    fn expired(&self, window: &Window<I>, now: I) -> bool {
        Duration::from(now.duration_since(window.start)) >= self.window
    }

    /// Count `up` and `down` bytes of `sandbox`; refuse when the window's totals are now over a budget.
    pub(super) fn count(&self, incarnation: &Incarnation, up: u64, down: u64, now: I) -> Result<(), LimitRefusal> {
        let mut windows = self.lock();
        if let Some(window) = windows.get_mut(incarnation) {
            if self.expired(window, now) {
                *window = Window {
                    start: now,
                    up: 0,
                    down: 0,
                };
            }
            window.up = window.up.saturating_add(up);
            window.down = window.down.saturating_add(down);
            let window = *window;
            drop(windows);
            return self.over(incarnation, &window, now, |used, budget| used > budget);
        }
        if up == 0 && down == 0 {
            return Ok(());
        }
        let window = Window { start: now, up, down };
        windows.insert(incarnation.clone(), window);
        drop(windows);
        self.over(incarnation, &window, now, |used, budget| used > budget)
    }

    /// Refuse when a budget of `sandbox`'s current window is spent (all of it used).
    pub(super) fn check(&self, incarnation: &Incarnation, now: I) -> Result<(), LimitRefusal> {
        let window = self.lock().get(incarnation).copied();
        match window {
            Some(window) if !self.expired(&window, now) => {
                self.over(incarnation, &window, now, |used, budget| used >= budget)
            }
            _ => Ok(()),
        }
    }

    /// Bytes (up, down) counted in `sandbox`'s current window.
    #[cfg(test)]
    pub(super) fn usage(&self, incarnation: &Incarnation, now: I) -> (u64, u64) {
        match self.lock().get(incarnation) {
            Some(window) if !self.expired(window, now) => (window.up, window.down),
            _ => (0, 0),
        }
    }

    /// Forget windows that are over.
    pub(super) fn housekeep(&self, now: I) {
        let mut windows = self.lock();
        windows.retain(|_, window| !self.expired(window, now));
        windows.shrink_to_fit();
    }

    /// Number of sandboxes with a window.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.lock().len()
    }

    /// The first budget (upload, then download) for which `exceeds(used, budget)` holds, as a refusal.
    fn over(
        &self,
        incarnation: &Incarnation,
        window: &Window<I>,
        now: I,
        exceeds: impl Fn(u64, u64) -> bool,
    ) -> Result<(), LimitRefusal> {
        let (reason, direction, budget) = match (self.upload, self.download) {
            (Some(budget), _) if exceeds(window.up, budget) => (LimitRefusal::UPLOAD_BUDGET, "upload", budget),
            (_, Some(budget)) if exceeds(window.down, budget) => (LimitRefusal::DOWNLOAD_BUDGET, "download", budget),
            _ => return Ok(()),
        };
        let elapsed = Duration::from(now.duration_since(window.start));
        let left = self.window.saturating_sub(elapsed);
        Err(LimitRefusal {
            reason,
            retry_after: whole_seconds(left),
            message: format!(
                "sandbox {incarnation} has used its {direction} budget of {budget} bytes per {}; it renews in {}",
                human(self.window),
                human(whole_seconds(left)),
            ),
        })
    }
}

/// A duration in the largest whole unit that states it exactly: "1h", "90m", "45s", "250ms".
fn human(d: Duration) -> String {
    let secs = d.as_secs();
    if d.subsec_nanos() != 0 || secs == 0 {
        format!("{}ms", d.as_millis())
    } else if secs.is_multiple_of(3600) {
        format!("{}h", secs / 3600)
    } else if secs.is_multiple_of(60) {
        format!("{}m", secs / 60)
    } else {
        format!("{secs}s")
    }
}

#[cfg(test)]
#[path = "budget_tests.rs"]
mod tests;
