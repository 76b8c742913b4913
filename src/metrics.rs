//! Prometheus metrics: every counter, gauge and histogram cordon exports, and their text exposition.
//!
//! One [`Metrics`] is built at start-up and shared (behind an `Arc`) by every task; updating a
//! metric is a hash lookup and an atomic add. [`Metrics::encode`] renders the OpenMetrics text
//! that `GET /metrics` serves with [`CONTENT_TYPE`].
//!
//! Label values come from fixed code lists (kinds, decisions, reason codes), configuration names
//! (credentials) or sandbox names. Sandboxes come and go at run time, so their per-sandbox gauge
//! series are dropped with [`Metrics::forget_sandbox`] once nothing of theirs is open.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, RwLock};
use std::time::Duration;

mod audit;
pub(crate) mod models;
mod process;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets_range};
use prometheus_client::registry::{Registry, Unit};

use crate::locks::Unpoisoned;
use crate::names::SandboxId;

/// The Content-Type to serve [`Metrics::encode`] with: OpenMetrics text 1.0.0, which is what
/// prometheus-client's text encoder produces (it ends with `# EOF`).
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Smallest latency bucket bound, in seconds (0.5 ms).
const LATENCY_MIN_SECONDS: f64 = 0.000_5;
/// Largest finite latency bucket bound, in seconds; slower ones land in `+Inf`.
const LATENCY_MAX_SECONDS: f64 = 60.0;
/// Number of finite latency buckets: each bound is about twice the one before.
const LATENCY_BUCKETS: u16 = 18;

/// A label set: fixed label names, each with this series' value.
type Labels<const N: usize> = [(&'static str, String); N];

/// Labels of the per-request series, whose values are nearly always constants: building them for a
/// request then allocates nothing.
type RequestLabels<const N: usize> = [(&'static str, Cow<'static, str>); N];

/// The owned label set of `pairs`.
fn labels<const N: usize>(pairs: [(&'static str, &str); N]) -> Labels<N> {
    pairs.map(|(name, value)| (name, value.to_owned()))
}

/// Add one to the series of `family` labelled `pairs`, creating it at zero first if need be.
fn inc<const N: usize>(family: &Family<Labels<N>, Counter>, pairs: [(&'static str, &str); N]) {
    family.get_or_create(&labels(pairs)).inc();
}

/// A latency histogram with cordon's buckets: exponential from 0.5 ms to 60 s, each bound about
/// twice the one before, rounded to two significant digits so `le` labels read `0.0039`, not
/// `0.003938184935621914`.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets_range(LATENCY_MIN_SECONDS, LATENCY_MAX_SECONDS, LATENCY_BUCKETS).map(two_digits))
}

/// `bound` rounded to two significant digits (positive, finite bounds only).
fn two_digits(bound: f64) -> f64 {
    // A power of ten this small is exact, and one correctly rounded division gives the double
    // nearest the decimal, which prints as that decimal.
    let scale = 10_f64.powf(1.0 - bound.log10().floor());
    (bound * scale).round() / scale
}

/// A `u64` gauge (generation numbers and counts are never negative).
type U64Gauge = Gauge<u64, AtomicU64>;

/// Every metric cordon exports, registered once; cheap to update from many tasks.
#[derive(Debug)]
pub(crate) struct Metrics {
    /// Owns the descriptors; the handles below share their values with it.
    registry: Registry,
    requests: Family<RequestLabels<4>, Counter>,
    durations: Family<RequestLabels<3>, Histogram, fn() -> Histogram>,
    connections: Family<Labels<1>, Gauge>,
    tunnels: Family<Labels<2>, Gauge>,
    cert_hits: Counter,
    cert_misses: Counter,
    token_mints: Family<Labels<2>, Counter>,
    reloads: Family<Labels<2>, Counter>,
    config_generation: U64Gauge,
    sandboxes: U64Gauge,
    approvals_pending: U64Gauge,
    store_up: U64Gauge,
    /// The audit output and its export.
    pub(crate) audit: audit::AuditMetrics,
    /// What model API calls used.
    pub(crate) models: std::sync::Arc<models::ModelMetrics>,
    replicas_live: U64Gauge,
    sandbox_closures: Family<Labels<1>, Counter>,
    violations: Family<Labels<2>, Counter>,
    budgets_spent: Family<Labels<1>, Counter>,
    restarts: Family<Labels<1>, Counter>,
    /// Held shared while a per-sandbox gauge changes, exclusively while `forget_sandbox` checks
    /// and removes, so no open can slip in between the "is it zero" check and the removal.
    sandbox_gate: RwLock<()>,
    /// Every tunnel mode seen, so `forget_sandbox` knows which tunnel series a sandbox may have.
    tunnel_modes: Mutex<BTreeSet<String>>,
}

impl Metrics {
    /// Build every metric and register it; all counters start at zero.
    pub(crate) fn new() -> Metrics {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels<4>, Counter>::default();
        let durations: Family<RequestLabels<3>, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(latency_histogram);
        let connections = Family::<Labels<1>, Gauge>::default();
        let tunnels = Family::<Labels<2>, Gauge>::default();
        let cert_lookups = Family::<Labels<1>, Counter>::default();
        let token_mints = Family::<Labels<2>, Counter>::default();
        let reloads = Family::<Labels<2>, Counter>::default();
        let config_generation = U64Gauge::default();
        let sandboxes = U64Gauge::default();
        let approvals_pending = U64Gauge::default();
        let store_up = U64Gauge::default();
        store_up.set(1);
        let replicas_live = U64Gauge::default();
        replicas_live.set(1);
        let sandbox_closures = Family::<Labels<1>, Counter>::default();
        let violations = Family::<Labels<2>, Counter>::default();
        let budgets_spent = Family::<Labels<1>, Counter>::default();
        let restarts = Family::<Labels<1>, Counter>::default();
        registry.register(
            "cordon_background_restarts",
            "Background tasks that panicked and were started again, by task (maintenance, budgets, store)",
            restarts.clone(),
        );
        registry.register(
            "cordon_credential_budgets_spent",
            "Credential budgets spent: once per (sandbox or user, credential) and window, by credential",
            budgets_spent.clone(),
        );
        registry.register(
            "cordon_violations",
            "on_violation actions taken, by the kind of refusal counted and the action (revoke, hold)",
            violations.clone(),
        );

        registry.register(
            "cordon_requests",
            "Requests and CONNECT tunnels finished, by kind, decision and reason code as their audit records say, and \
             outcome (error: let through, then failed)",
            requests.clone(),
        );
        registry.register_with_unit(
            "cordon_request_duration",
            "Time from the start of a request or tunnel to its end, by kind, decision and outcome",
            Unit::Seconds,
            durations.clone(),
        );
        registry.register(
            "cordon_open_connections",
            "Client connections open now, by sandbox",
            connections.clone(),
        );
        registry.register(
            "cordon_open_tunnels",
            "CONNECT tunnels open now, by sandbox and mode (intercept or tunnel)",
            tunnels.clone(),
        );
        registry.register(
            "cordon_cert_cache_lookups",
            "Leaf certificate cache lookups, by result (hit or miss)",
            cert_lookups.clone(),
        );
        registry.register(
            "cordon_token_mints",
            "Upstream credential tokens minted, by credential name and result (ok, failed, or dead: a sign-in cordon holds \
             was refused for good and needs seeding again)",
            token_mints.clone(),
        );
        registry.register(
            "cordon_reloads",
            "Configuration reloads attempted, by trigger and outcome",
            reloads.clone(),
        );
        registry.register(
            "cordon_config_generation",
            "Generation number of the configuration in force",
            config_generation.clone(),
        );
        registry.register(
            "cordon_sandboxes",
            "Run-time sandboxes registered now",
            sandboxes.clone(),
        );
        registry.register(
            "cordon_approvals_pending",
            "Requests held now for a human's approval (action: ask)",
            approvals_pending.clone(),
        );
        registry.register(
            "cordon_store_up",
            "1 while the shared PostgreSQL store is reachable, 0 while it is down (always 1 without one)",
            store_up.clone(),
        );
        let audit = audit::AuditMetrics::register(&mut registry);
        let models = std::sync::Arc::new(models::ModelMetrics::register(&mut registry));
        process::register(&mut registry);
        registry.register(
            "cordon_replicas_live",
            "Replicas with a recent heartbeat in the shared store's registry (1 without one)",
            replicas_live.clone(),
        );
        registry.register(
            "cordon_sandbox_closures",
            "Sandboxes whose connections were closed because they were revoked, expired or removed",
            sandbox_closures.clone(),
        );

        // Both cache series exist from the start so a hit ratio is defined before the first miss.
        let cert_hits = cert_lookups.get_or_create_owned(&labels([("result", "hit")]));
        let cert_misses = cert_lookups.get_or_create_owned(&labels([("result", "miss")]));

        Metrics {
            registry,
            requests,
            durations,
            connections,
            tunnels,
            cert_hits,
            cert_misses,
            token_mints,
            reloads,
            config_generation,
            sandboxes,
            approvals_pending,
            store_up,
            audit,
            models,
            replicas_live,
            sandbox_closures,
            violations,
            budgets_spent,
            restarts,
            sandbox_gate: RwLock::new(()),
            tunnel_modes: Mutex::new(BTreeSet::new()),
        }
    }

    /// One finished request or tunnel, labelled as its audit record says.
    ///
    /// `kind` is `"http"`, `"connect"`, `"https"` or `"malformed"` (and the other record kinds); `decision` is
    /// the record's: `"allow"`, `"deny"` or `"would_deny"`; `outcome` is `"error"` when an exchange let through
    /// then failed (the record's `error`: the upstream refused, timed out or reset), `"ok"` otherwise; `reason`
    /// is the record's code such as `"no_rule"` or `"upstream_failed"`, empty for none (exported as `"none"`);
    /// `latency` runs from start to end.
    pub(crate) fn request(
        &self,
        kind: &'static str,
        decision: &'static str,
        outcome: &'static str,
        reason: &str,
        latency: Duration,
    ) {
        let reason = if reason.is_empty() {
            Cow::Borrowed("none")
        } else {
            Cow::Owned(reason.to_owned())
        };
        let (kind, decision, outcome) = (Cow::Borrowed(kind), Cow::Borrowed(decision), Cow::Borrowed(outcome));
        self.requests
            .get_or_create(&[
                ("kind", kind.clone()),
                ("decision", decision.clone()),
                ("outcome", outcome.clone()),
                ("reason", reason),
            ])
            .inc();
        self.durations
            .get_or_create(&[("kind", kind), ("decision", decision), ("outcome", outcome)])
            .observe(latency.as_secs_f64());
    }

    /// A client connection (plain proxy connection) attributed to `sandbox` opened.
    pub(crate) fn connection_opened(&self, sandbox: &SandboxId) {
        let _gate = self.sandbox_gate.read().unpoisoned();
        self.connections.get_or_create(&sandbox_labels(sandbox)).inc();
    }

    /// A client connection attributed to `sandbox` closed.
    ///
    /// A close with no series (the sandbox was already forgotten) changes nothing, so a stray
    /// close cannot bring back a series at -1.
    pub(crate) fn connection_closed(&self, sandbox: &SandboxId) {
        let _gate = self.sandbox_gate.read().unpoisoned();
        if let Some(gauge) = self.connections.get(&sandbox_labels(sandbox)) {
            gauge.dec();
        }
    }

    /// A CONNECT tunnel of `sandbox` opened; `mode` is `"intercept"` or `"tunnel"`.
    pub(crate) fn tunnel_opened(&self, sandbox: &SandboxId, mode: &str) {
        let _gate = self.sandbox_gate.read().unpoisoned();
        {
            let mut modes = self.tunnel_modes.lock().unpoisoned();
            if !modes.contains(mode) {
                modes.insert(mode.to_owned());
            }
        }
        self.tunnels.get_or_create(&tunnel_labels(sandbox, mode)).inc();
    }

    /// A CONNECT tunnel of `sandbox` closed; `mode` as given when it opened.
    ///
    /// Like [`Metrics::connection_closed`], a close with no series changes nothing.
    pub(crate) fn tunnel_closed(&self, sandbox: &SandboxId, mode: &str) {
        let _gate = self.sandbox_gate.read().unpoisoned();
        if let Some(gauge) = self.tunnels.get(&tunnel_labels(sandbox, mode)) {
            gauge.dec();
        }
    }

    /// Leaf certificate cache lookups: `hit` when a cached leaf was found.
    pub(crate) fn cert_cache(&self, hit: bool) {
        if hit { &self.cert_hits } else { &self.cert_misses }.inc();
    }

    /// Token mints by credential name: `ok` or failed.
    pub(crate) fn token_mint(&self, credential: &str, ok: bool) {
        let result = if ok { "ok" } else { "failed" };
        inc(&self.token_mints, [("credential", credential), ("result", result)]);
    }

    /// A sign-in cordon holds (`oauth2_refresh`) refused for good: `result="dead"` of the token mints.
    pub(crate) fn signin_dead(&self, credential: &str) {
        inc(&self.token_mints, [("credential", credential), ("result", "dead")]);
    }

    /// A configuration reload: `trigger` is `"signal"`, `"file"` or `"api"`; `outcome` is `"ok"`,
    /// `"invalid"` or `"error"`.
    pub(crate) fn reload(&self, trigger: &str, outcome: &str) {
        inc(&self.reloads, [("trigger", trigger), ("outcome", outcome)]);
    }

    /// The generation number of the configuration in force.
    pub(crate) fn set_config_generation(&self, generation: u64) {
        self.config_generation.set(generation);
    }

    /// Requests held for approval now.
    pub(crate) fn set_approvals_pending(&self, count: u64) {
        self.approvals_pending.set(count);
    }

    /// Run-time sandboxes alive, set by the control plane.
    pub(crate) fn set_sandboxes(&self, count: u64) {
        self.sandboxes.set(count);
    }

    /// The shared store's state and the live replicas, set by the replica's maintenance.
    pub(crate) fn set_store(&self, up: bool, replicas: u64) {
        self.store_up.set(u64::from(up));
        self.replicas_live.set(replicas);
    }

    /// A credential budget spent (the first refusal of its window).
    pub(crate) fn credential_budget_spent(&self, credential: &str) {
        inc(&self.budgets_spent, [("credential", credential)]);
    }

    /// A background task that panicked, started again.
    pub(crate) fn background_restart(&self, task: &str) {
        inc(&self.restarts, [("task", task)]);
    }

    /// An `on_violation` action taken.
    pub(crate) fn violation(&self, kind: &str, action: &str) {
        inc(&self.violations, [("kind", kind), ("action", action)]);
    }

    /// A sandbox revoked, expired or removed whose connections were closed: `reason` is
    /// `"revoked"`, `"expired"` or `"removed"`.
    pub(crate) fn sandbox_closed(&self, reason: &str) {
        inc(&self.sandbox_closures, [("reason", reason)]);
    }

    /// Prometheus / OpenMetrics text exposition (what `GET /metrics` serves); ends with `# EOF`.
    pub(crate) fn encode(&self) -> String {
        let mut text = String::new();
        if encode(&mut text, &self.registry).is_err() {
            // Writing to a String cannot fail and no metric here has a form the text encoder
            // rejects; should that ever change, serve a valid empty exposition, not half of one.
            text.clear();
            text.push_str("# EOF\n");
        }
        text
    }

    /// Forget the per-sandbox gauge series of a sandbox that is gone, so label sets do not grow
    /// forever. Does nothing while any connection or tunnel of the sandbox is still open.
    pub(crate) fn forget_sandbox(&self, sandbox: &SandboxId) {
        let _gate = self.sandbox_gate.write().unpoisoned();
        let connection_key = sandbox_labels(sandbox);
        let tunnel_keys: Vec<Labels<2>> = (self.tunnel_modes.lock().unpoisoned().iter())
            .map(|mode| tunnel_labels(sandbox, mode))
            .collect();
        // Each `get` guard is dropped inside its closure, before any `remove` takes the write lock.
        let idle = self
            .connections
            .get(&connection_key)
            .is_none_or(|gauge| gauge.get() == 0)
            && tunnel_keys
                .iter()
                .all(|key| self.tunnels.get(key).is_none_or(|gauge| gauge.get() == 0));
        if !idle {
            return;
        }
        self.connections.remove(&connection_key);
        for key in &tunnel_keys {
            self.tunnels.remove(key);
        }
    }
}

impl Default for Metrics {
    /// Same as [`Metrics::new`].
    fn default() -> Self {
        Self::new()
    }
}

/// The label set of a sandbox's connection gauge.
fn sandbox_labels(sandbox: &SandboxId) -> Labels<1> {
    labels([("sandbox", sandbox.as_str())])
}

/// The label set of a sandbox's tunnel gauge for one mode.
fn tunnel_labels(sandbox: &SandboxId, mode: &str) -> Labels<2> {
    labels([("sandbox", sandbox.as_str()), ("mode", mode)])
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
