//! Rate limits, open-connection caps, byte budgets and failed-authentication throttling.
//!
//! Every request and connection of a sandbox passes through cordon; these limits keep a runaway or
//! abusive agent (crypto mining, scraping) from hurting upstreams or the host:
//!
//! - requests per second with a burst, per sandbox, per user (over all of its sandboxes) and per
//!   (sandbox, host) ([`Limits::request`]);
//! - new connections and tunnels per second per sandbox ([`Limits::connection`]);
//! - open connections and tunnels per sandbox and per user ([`Limits::open`], released by [`OpenGuard`]);
//! - upload and download bytes per sandbox per fixed window ([`Limits::bytes`], [`Limits::budget`]);
//! - failed proxy authentications per (source address, claimed sandbox id), under a ceiling per source address
//!   ([`Limits::auth_failure`], [`Limits::auth_blocked`]).
//!
//! Rates are governor's keyed GCRA limiters. Time comes from a governor [`Clock`], so tests drive a
//! [`governor::clock::FakeRelativeClock`] instead of sleeping. A refusal is a [`LimitRefusal`]: a stable
//! reason code, a `Retry-After` in whole seconds and a sentence for the person behind the agent.
//! [`Limits::housekeep`], called periodically, forgets the keys of sandboxes that have gone idle.

mod auth;
mod budget;
mod credential_budget;
pub mod model_ledger;
mod open;
mod rate;
mod refusal;
mod share;
mod shared_bytes;
mod unauthenticated;

use crate::names::Incarnation;
use std::fmt;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, MonotonicClock};

use self::auth::Auth;
use self::budget::Budgets;
pub(crate) use self::credential_budget::{Budget, CredentialBudgetCounts};
use self::open::Open;
pub(crate) use self::open::OpenGuard;
use self::rate::{Keyed, describe};
pub(crate) use self::refusal::LimitRefusal;
pub use self::shared_bytes::{Counts, SharedBytes};
pub use self::unauthenticated::{Unauthenticated, Waiting};
use crate::names::SandboxId;

/// Something told of every byte moved; returning false means the tunnel must stop (budget spent).
pub(crate) trait Meter: Send + Sync {
    /// `up` bytes from the client, `down` bytes to it. False: over budget.
    fn add(&self, up: u64, down: u64) -> bool;
}

/// A rate: `per_second` sustained, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rate {
    /// Cells allowed per second, sustained.
    pub(crate) per_second: NonZeroU32,
    /// Cells allowed at once (the bucket size).
    pub(crate) burst: NonZeroU32,
}

/// What the configuration sets; `None` = unlimited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitSpec {
    /// Requests per sandbox.
    pub(crate) sandbox_requests: Option<Rate>,
    /// Requests per user, over all of the user's sandboxes.
    pub(crate) user_requests: Option<Rate>,
    /// Requests per (sandbox, host).
    pub(crate) host_requests: Option<Rate>,
    /// New connections and tunnels per sandbox.
    pub(crate) sandbox_connections: Option<Rate>,
    /// Open connections and tunnels per sandbox.
    pub(crate) sandbox_open: Option<u32>,
    /// Open connections and tunnels per user, over all of the user's sandboxes.
    pub(crate) user_open: Option<u32>,
    /// Length of one byte-budget window (default one hour).
    pub(crate) budget_window: Duration,
    /// Bytes a sandbox may send upstream per window.
    pub(crate) sandbox_upload: Option<u64>,
    /// Bytes a sandbox may receive from upstream per window.
    pub(crate) sandbox_download: Option<u64>,
    /// Failed proxy authentications per (source address, claimed sandbox id).
    pub(crate) auth_failures: Option<Rate>,
    /// Failed proxy authentications per source address, whatever the claimed id (a ceiling above the former).
    pub(crate) source_auth_failures: Option<Rate>,
}

impl Default for LimitSpec {
    /// Everything unlimited, with a one-hour budget window.
    fn default() -> Self {
        Self {
            sandbox_requests: None,
            user_requests: None,
            host_requests: None,
            sandbox_connections: None,
            sandbox_open: None,
            user_open: None,
            budget_window: Duration::from_secs(3600),
            sandbox_upload: None,
            sandbox_download: None,
            auth_failures: None,
            source_auth_failures: None,
        }
    }
}

/// All limits of one configuration, shared (behind an `Arc`) by every task of the proxy.
///
/// Generic over governor's [`Clock`] so tests can use a fake one; production uses [`DefaultClock`].
/// Keys are tracked per sandbox, user, (sandbox, host) and source address as they appear, and
/// forgotten by [`Limits::housekeep`] once they are indistinguishable from fresh.
pub struct Limits<C: Clock = MonotonicClock> {
    /// The configuration these limits were built from.
    spec: LimitSpec,
    /// The clock of budget windows and auth blocks (the limiters hold clones of it).
    clock: C,
    /// Requests per sandbox.
    sandbox_requests: Option<Keyed<SandboxId, C>>,
    /// Requests per user.
    user_requests: Option<Keyed<String, C>>,
    /// Requests per (sandbox, host).
    host_requests: Option<Keyed<(SandboxId, String), C>>,
    /// New connections and tunnels per sandbox.
    sandbox_connections: Option<Keyed<SandboxId, C>>,
    /// Open connections and tunnels.
    open: Open,
    /// Byte budgets.
    budgets: Budgets<C::Instant>,
    /// Failed-authentication throttle.
    auth: Auth<C>,
    /// Byte counts shared with other replicas: budgets are then enforced on them instead.
    shared_bytes: Option<std::sync::Arc<SharedBytes>>,
}

impl Limits {
    /// Limits for `spec` on the real (monotonic) clock.
    pub fn new(spec: &LimitSpec) -> Limits {
        Limits::with_clock(spec, MonotonicClock)
    }
}

impl<C: Clock + Clone> Limits<C> {
    /// Limits for `spec` on `clock` (every limiter gets a clone, so all see the same time).
    pub(crate) fn with_clock(spec: &LimitSpec, clock: C) -> Limits<C> {
        let keyed = |rate: Option<Rate>| rate.map(|rate| Keyed::new(rate, clock.clone()));
        Limits {
            spec: spec.clone(),
            sandbox_requests: keyed(spec.sandbox_requests),
            user_requests: spec.user_requests.map(|rate| Keyed::new(rate, clock.clone())),
            host_requests: spec.host_requests.map(|rate| Keyed::new(rate, clock.clone())),
            sandbox_connections: keyed(spec.sandbox_connections),
            open: Open::default(),
            budgets: Budgets::new(spec.budget_window, spec.sandbox_upload, spec.sandbox_download),
            auth: Auth::new(spec.auth_failures, spec.source_auth_failures, clock.clone()),
            shared_bytes: None,
            clock,
        }
    }

    /// The same limits enforcing byte budgets on counts shared with other replicas.
    pub(crate) fn with_shared_bytes(self, shared: Option<std::sync::Arc<SharedBytes>>) -> Limits<C> {
        Limits {
            shared_bytes: shared,
            ..self
        }
    }

    /// The configuration these limits were built from.
    pub(crate) fn spec(&self) -> &LimitSpec {
        &self.spec
    }

    /// One request of `sandbox` (owned by `user`) to `host`.
    ///
    /// Checks the sandbox, user and (sandbox, host) rates, in that order, and reports the first that
    /// refuses. A refused cell is not consumed, and a limiter after the refusing one is not asked;
    /// but governor consumes on success, so a request refused by the user rate has used one cell of
    /// its sandbox's rate, and one refused by the host rate one cell of both the sandbox's and the
    /// user's. `host` is taken as given: pass it normalized (lower case, no trailing dot); `None` (a request
    /// whose destination could not be read) skips the per-host rate.
    pub fn request(&self, sandbox: &SandboxId, user: &str, host: Option<&str>) -> Result<(), LimitRefusal> {
        if let Some(limiter) = &self.sandbox_requests {
            limiter.check(sandbox).map_err(|denied| {
                denied.refusal(
                    LimitRefusal::SANDBOX_RATE,
                    format!("sandbox {sandbox} is over {}", describe(limiter.rate(), "requests")),
                )
            })?;
        }
        if let Some(limiter) = &self.user_requests {
            limiter.check(&user.to_owned()).map_err(|denied| {
                let rate = describe(limiter.rate(), "requests");
                denied.refusal(
                    LimitRefusal::USER_RATE,
                    format!("user {user} is over {rate} across their sandboxes"),
                )
            })?;
        }
        if let (Some(limiter), Some(host)) = (&self.host_requests, host) {
            limiter.check(&(sandbox.clone(), host.to_owned())).map_err(|denied| {
                let rate = describe(limiter.rate(), "requests");
                denied.refusal(
                    LimitRefusal::HOST_RATE,
                    format!("sandbox {sandbox} is over {rate} to {host}"),
                )
            })?;
        }
        Ok(())
    }

    /// A new connection or tunnel of `sandbox`.
    pub(crate) fn connection(&self, sandbox: &SandboxId) -> Result<(), LimitRefusal> {
        let Some(limiter) = &self.sandbox_connections else {
            return Ok(());
        };
        limiter.check(sandbox).map_err(|denied| {
            let rate = describe(limiter.rate(), "new connections");
            denied.refusal(
                LimitRefusal::CONNECTION_RATE,
                format!("sandbox {sandbox} is opening over {rate}"),
            )
        })
    }

    /// Register one open connection or tunnel of `sandbox` (owned by `user`).
    ///
    /// The returned guard gives the slot back when dropped. Refused when the sandbox (checked first)
    /// or the user already has as many open as its cap allows; a refusal takes no slot.
    pub(crate) fn open(&self, sandbox: &SandboxId, user: &str) -> Result<OpenGuard, LimitRefusal> {
        self.open
            .open(sandbox, user, self.spec.sandbox_open, self.spec.user_open)
    }

    /// Open connections and tunnels of `sandbox` and of `user` now (for views and tests).
    #[cfg(test)]
    pub(crate) fn open_counts(&self, sandbox: &SandboxId, user: &str) -> (u32, u32) {
        self.open.counts(sandbox, user)
    }

    /// Whether new traffic of the sandbox incarnation `incarnation` (`Sandbox::incarnation`: budgets are kept
    /// per incarnation, not per id) is refused because a byte budget of the current window is spent.
    ///
    /// A budget is spent once the window's bytes reach it: with a budget of 100, after exactly 100
    /// bytes [`Limits::bytes`] still said yes, but there is nothing left for new traffic.
    pub(crate) fn budget(&self, incarnation: &Incarnation) -> Result<(), LimitRefusal> {
        if let Some(shared) = &self.shared_bytes {
            return shared.over(
                incarnation,
                self.spec.sandbox_upload,
                self.spec.sandbox_download,
                |u, b| u >= b,
            );
        }
        self.budgets.check(incarnation, self.clock.now())
    }

    /// Count `up` (sent upstream) and `down` (received) bytes moved for the sandbox incarnation `incarnation`.
    ///
    /// Returns a refusal when this pushed (or found) the sandbox over a budget, so the caller can close
    /// what it has open; the bytes are counted either way. Windows are fixed, per sandbox, starting at
    /// its first counted byte; the first bytes after a window ends start a new one from zero. Bytes
    /// are counted even when no budget is set (for [`Limits::usage`]). Cheap: one lock and one lookup,
    /// no allocation once the sandbox has a window.
    pub fn bytes(&self, incarnation: &Incarnation, up: u64, down: u64) -> Result<(), LimitRefusal> {
        if let Some(shared) = &self.shared_bytes {
            shared.add(incarnation, up, down);
            return shared.over(
                incarnation,
                self.spec.sandbox_upload,
                self.spec.sandbox_download,
                |u, b| u > b,
            );
        }
        self.budgets.count(incarnation, up, down, self.clock.now())
    }

    /// Bytes (up, down) counted for the sandbox incarnation `incarnation` in its current window.
    #[cfg(test)]
    pub(crate) fn usage(&self, incarnation: &Incarnation) -> (u64, u64) {
        self.budgets.usage(incarnation, self.clock.now())
    }

    /// A failed proxy authentication from `source` naming sandbox `claim` (if it named one): `Ok` while under
    /// both rates, `auth_throttled` when over either.
    ///
    /// A refusal also blocks the (source, claim), or the whole source when its ceiling was passed, until its
    /// next failure would be allowed (see [`Limits::auth_blocked`]).
    pub(crate) fn auth_failure(&self, source: IpAddr, claim: Option<&str>) -> Result<(), LimitRefusal> {
        self.auth.failure(source, claim)
    }

    /// The `auth_throttled` refusal if `source` is currently throttled, without counting anything.
    ///
    /// An address is throttled from a refused [`Limits::auth_failure`] until its next failure would be
    /// allowed; an address that used its burst but was not refused yet is not.
    pub(crate) fn auth_blocked(&self, source: IpAddr, claim: Option<&str>) -> Option<LimitRefusal> {
        self.auth.blocked(source, claim, self.clock.now())
    }

    /// Forget idle keys so memory does not grow with sandboxes, users and addresses that are gone.
    ///
    /// Drops rate states that are back to fresh (governor's `retain_recent`, then `shrink_to_fit`),
    /// byte windows that are over, auth blocks that expired and zero open counts. Call periodically.
    pub(crate) fn housekeep(&self) {
        if let Some(limiter) = &self.user_requests {
            limiter.housekeep();
        }
        let limiters = [&self.sandbox_requests, &self.sandbox_connections];
        for limiter in limiters.into_iter().flatten() {
            limiter.housekeep();
        }
        if let Some(limiter) = &self.host_requests {
            limiter.housekeep();
        }
        let now = self.clock.now();
        self.budgets.housekeep(now);
        self.auth.housekeep(now);
        self.open.housekeep();
    }

    /// Number of keys held by each structure, to observe `housekeep`.
    #[cfg(test)]
    fn tracked(&self) -> Tracked {
        let len = |limiter: &Option<Keyed<SandboxId, C>>| limiter.as_ref().map_or(0, Keyed::len);
        let (auth_states, auth_blocks) = self.auth.len();
        Tracked {
            sandbox_requests: len(&self.sandbox_requests),
            user_requests: self.user_requests.as_ref().map_or(0, Keyed::len),
            host_requests: self.host_requests.as_ref().map_or(0, Keyed::len),
            sandbox_connections: len(&self.sandbox_connections),
            budgets: self.budgets.len(),
            auth_states,
            auth_blocks,
            open: self.open.len(),
        }
    }
}

impl<C: Clock> fmt::Debug for Limits<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Limits")
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

/// Keys held by each structure of a [`Limits`] (tests only).
#[cfg(test)]
#[derive(Debug, Default, PartialEq, Eq)]
struct Tracked {
    /// Keys of the sandbox request limiter.
    sandbox_requests: usize,
    /// Keys of the user request limiter.
    user_requests: usize,
    /// Keys of the (sandbox, host) request limiter.
    host_requests: usize,
    /// Keys of the connection limiter.
    sandbox_connections: usize,
    /// Sandboxes with a byte window.
    budgets: usize,
    /// Addresses in the auth failure limiter.
    auth_states: usize,
    /// Addresses in the auth blocked map.
    auth_blocks: usize,
    /// Sandboxes and users with an open count.
    open: (usize, usize),
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;

#[cfg(test)]
mod proptests;
