//! The run-time state: what lives as long as cordon (CAs, leaves, run-time sandboxes, open sessions,
//! metrics, the replica's part in a shared store ([`crate::replica`]), the violation watch
//! ([`crate::violation`])) and the configuration generation in force ([`crate::generation`]), swapped whole on
//! reload. The state alone acts on what the replica and the watch learn: it closes, revokes and re-decides.
//!
//! Every request loads the generation once when it starts and finishes on it, so a reload never changes
//! the rules under a request in flight; the next request sees the new ones.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use arc_swap::ArcSwap;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::approval::Approvals;
use crate::audit;
use crate::config::Config;
use crate::config::violations::ViolationAction;
use crate::control::{self, Control};
use crate::generation::Generation;
use crate::identity::{Closed, Origin, Sandbox};
use crate::limits::{CredentialBudgetCounts, Limits, SharedBytes};
use crate::metrics::Metrics;
use crate::policy::{Question, TlsMode};
use crate::replica::{Follower, SharedStore};
use crate::session::admission::AuthBursts;
use crate::session::leases::{Sessions, TunnelCheck};
use crate::target::Target;
use crate::tls::ca::SandboxCas;
use crate::tls::ca::{CaError, SandboxCa};
use crate::tls::cache::LeafCache;
use crate::violation::{Trigger, Watch};
use crate::webhook::Webhook;

mod follower;
mod previews_open;

/// How often open sessions are checked against revocations and expiries, and the store for other
/// replicas' writes.
const SWEEP_EVERY: Duration = Duration::from_millis(250);

/// Shared by every connection of one running proxy.
pub struct ProxyState {
    /// The generation in force (shared with the violation watch, which reads it).
    live: Arc<ArcSwap<Generation>>,
    generations: AtomicU64,
    self_addrs: Vec<SocketAddr>,
    reloading: tokio::sync::Mutex<()>,
    /// Where audit records go (counted in the metrics on the way).
    pub audit: Arc<dyn audit::Sink>,
    /// The latest refusals and decisions, as the console shows them (kept on the records' way out).
    pub(crate) recent: Arc<audit::Recent>,
    /// Per-sandbox CAs, loaded from `ca.dir` on first need.
    pub(crate) cas: SandboxCas,
    /// Leaf certificates by (sandbox, host).
    pub(crate) leaves: LeafCache,
    /// Sandboxes created at run time.
    pub control: Control,
    /// The PostgreSQL store this replica shares state through, if any.
    shared: Option<Arc<SharedStore>>,
    /// Open connections and tunnels by sandbox.
    pub(crate) sessions: Arc<Sessions>,
    /// What `/metrics` serves.
    pub(crate) metrics: Arc<Metrics>,
    /// Rates, caps and byte budgets (replaced on a reload that changes them, and when the number of live
    /// replicas sharing a store changes: each enforces its share).
    limits: ArcSwap<Limits>,
    /// Live replicas sharing the store (1 without one), which the limits are divided by.
    replicas: std::sync::atomic::AtomicUsize,
    /// Requests held for a human's approval, and standing grants.
    pub approvals: Arc<Approvals>,
    /// Throttled authentication failures waiting to be audited.
    pub auth_bursts: AuthBursts,
    /// Connections that have not authenticated yet, per source address.
    pub(crate) unauthenticated: Arc<crate::limits::Unauthenticated>,
    /// Every connection and tunnel task, so shutdown can wait for them.
    pub(crate) tasks: TaskTracker,
    /// Cancelled when the drain deadline has passed: whatever is still open is cut.
    pub(crate) hard_stop: CancellationToken,
    /// Cancelled when the drain begins (SIGTERM, SIGINT): `/readyz` says so at once, so a load balancer sends
    /// new traffic elsewhere while what is open finishes.
    pub(crate) draining: CancellationToken,
    /// `on_violation`: counts refusals on their way to the audit, and the sandboxes it suspended or held.
    pub(crate) violations: Arc<Watch>,
    /// What each (sandbox or user, credential) used of its budget in the current window.
    pub(crate) credential_budgets: Arc<CredentialBudgetCounts>,
    /// Where events are POSTed (`approval.webhook`), if anywhere.
    pub(crate) webhook: Option<Arc<Webhook>>,
    /// Preview URLs into sandboxes, with `listen.preview` (set at start; a restart changes them).
    pub(crate) previews: Option<Arc<crate::preview::Previews>>,
    /// What the protocols remember across requests.
    pub(crate) memory: ProtocolMemory,
}

/// What the protocols cordon reads inside requests remember across them: live traffic's outlives reloads; a dry
/// run (`cordon explain`) has its own, empty one.
#[derive(Default)]
pub(crate) struct ProtocolMemory {
    /// The MCP tools each sandbox saw, per server origin (pinned to what they said).
    pub(crate) mcp_pins: crate::mcp::tools::Pins,
    /// Each MCP session id, bound to the sandbox that first showed it.
    pub(crate) mcp_sessions: Arc<crate::mcp::sessions::McpSessions>,
    /// What unfinished MCP answers hold, per sandbox and in all.
    pub(crate) mcp_held: Arc<crate::mcp::held::Held>,
    /// The documents of GraphQL persisted queries seen with their hash, per endpoint.
    pub(crate) graphql_documents: crate::graphql::persisted::Persisted,
    /// What model API calls used of their budgets: this replica's, or every replica's through the shared store.
    pub(crate) model_ledger: crate::limits::model_ledger::Ledger,
    /// Where what model API calls used is counted as metrics (a dry run's count nowhere).
    pub(crate) model_metrics: Arc<crate::metrics::models::ModelMetrics>,
}

impl ProxyState {
    /// Assemble the state. `self_addrs` are cordon's own listening addresses, which the guard refuses
    /// to dial (a request to cordon itself would loop).
    pub async fn new(
        config: Config,
        sink: Arc<dyn audit::Sink>,
        self_addrs: Vec<SocketAddr>,
    ) -> Result<Arc<ProxyState>, String> {
        // SECURITY: a CA folder another user owns or can write holds CAs cordon did not make: refused at start.
        crate::tls::ca::CaStore::new(config.ca.dir.clone())
            .check_folders()
            .map_err(|e| e.to_string())?;
        let metrics = Arc::new(Metrics::new());
        let generation = Generation::build(1, config, &self_addrs, &metrics).await?;
        let config = generation.config.clone();
        let opened = crate::replica::open(&config, &generation).await?;
        let previews = previews_open::open(&generation).await?;
        let webhook = match &config.approval.webhook {
            None => None,
            Some(w) => {
                let secret = match &w.secret {
                    None => None,
                    Some(r) => Some(
                        generation
                            .credentials
                            .secrets()
                            .stored(r)
                            .await
                            .map_err(|e| format!("approval.webhook.secret: {e}"))?,
                    ),
                };
                let hook = Webhook::configured(w.url.clone(), secret, &config.upstream.extra_roots)?;
                Some(Arc::new(hook))
            }
        };
        let mut approvals = Approvals::configured(&config.approval, webhook.clone());
        if let Some(shared) = &opened.shared {
            approvals = approvals.with_shared(shared.approvals(config.approval.timeout));
        }
        let approvals = Arc::new(approvals);
        let hard_stop = CancellationToken::new();
        let validity = config.ca.leaf_validity;
        metrics.set_config_generation(1);
        let live = Arc::new(ArcSwap::from_pointee(generation));
        let credential_budgets = Arc::new(CredentialBudgetCounts::default());
        let (triggers, triggered) = unbounded_channel();
        let violations = Arc::new(Watch::new(sink, live.clone(), credential_budgets.clone(), triggers));
        let recent = Arc::new(audit::Recent::new(violations.clone()));
        // With a shared store, byte budgets are enforced on every replica's counts.
        let shared_bytes = opened.shared.as_ref().map(|s| s.bytes.clone());
        let state = Arc::new(ProxyState {
            live,
            generations: AtomicU64::new(1),
            self_addrs,
            reloading: tokio::sync::Mutex::new(()),
            audit: Arc::new(audit::Metered {
                inner: recent.clone(),
                metrics: metrics.clone(),
            }),
            recent,
            violations,
            credential_budgets,
            previews,
            memory: ProtocolMemory {
                model_ledger: crate::replica::model_ledger::ledger(opened.shared.as_deref()),
                model_metrics: metrics.models.clone(),
                ..ProtocolMemory::default()
            },
            webhook,
            cas: opened.cas,
            leaves: LeafCache::new(config.ca.leaf_cache, validity / 4, validity),
            control: opened.control,
            shared: opened.shared,
            sessions: Arc::new(Sessions::new(hard_stop.clone(), metrics.clone())),
            metrics,
            limits: ArcSwap::from_pointee(Limits::new(&config.limits.rates).with_shared_bytes(shared_bytes)),
            replicas: std::sync::atomic::AtomicUsize::new(1),
            approvals,
            auth_bursts: AuthBursts::default(),
            unauthenticated: Arc::default(),
            tasks: TaskTracker::new(),
            hard_stop,
            draining: CancellationToken::new(),
        });
        state.cas.ensure_declared(state.current().declared()).await?;
        let follower: Weak<dyn Follower> = Arc::downgrade(&state) as Weak<dyn Follower>;
        crate::replica::start(follower, opened.events);
        tokio::spawn(enforce(Arc::downgrade(&state), triggered));
        // SECURITY: the duties that enforce expiry, revocation and budgets on time survive a panic (a fork
        // flood that leaves no thread to start): they are started again, loudly.
        if let Some(shared) = &state.shared {
            let (store, budgets) = (Arc::downgrade(shared), Arc::downgrade(&state.credential_budgets));
            supervised(&state, "budgets", move || {
                crate::replica::budgets::flush_forever(store.clone(), budgets.clone())
            });
        }
        let weak = Arc::downgrade(&state);
        supervised(&state, "maintenance", move || maintain(weak.clone()));
        Ok(state)
    }

    /// The configuration generation in force.
    pub fn current(&self) -> Arc<Generation> {
        self.live.load_full()
    }

    /// The limits in force.
    pub(crate) fn limits(&self) -> Arc<Limits> {
        self.limits.load_full()
    }

    /// Swap in a new configuration, fully validated and built first; on any error the running one stays.
    /// `refuse` lists what the new configuration may not change against the old (what takes a restart);
    /// ids that run-time sandboxes hold are refused too. Sessions the new configuration no longer allows
    /// are closed at once. Returns the new generation number.
    pub(crate) async fn reload(
        &self,
        config: Config,
        refuse: impl FnOnce(&Config, &Config) -> Vec<String>,
    ) -> Result<u64, Vec<String>> {
        let _one_at_a_time = self.reloading.lock().await;
        let old = self.current();
        let mut errors = refuse(&old.config, &config);
        let now = control::now();
        errors.extend(crate::generation::held_by_runtime(&config, &self.control, now));
        if !errors.is_empty() {
            return Err(errors);
        }
        let number = self.generations.load(Ordering::SeqCst) + 1;
        let generation = Generation::build(number, config, &self.self_addrs, &self.metrics)
            .await
            .map_err(|e| vec![e])?;
        // Replicas sharing a store: the CAs of newly declared sandboxes exist before the configuration is in force.
        self.cas
            .ensure_declared(generation.declared())
            .await
            .map_err(|e| vec![e])?;
        if generation.config.limits.rates != old.config.limits.rates {
            // New bounds start from fresh counters; open guards give their slots back to the old ones.
            let share = generation
                .config
                .limits
                .rates
                .share(self.replicas.load(Ordering::Relaxed));
            self.limits
                .store(Arc::new(Limits::new(&share).with_shared_bytes(self.shared_bytes())));
        }
        self.generations.store(number, Ordering::SeqCst);
        self.live.store(Arc::new(generation));
        // Name constraints are judged again against the new policies when each CA is next needed.
        self.cas.reload();
        // Sandboxes' own policies are held to their (possibly narrowed) bases now; one that no longer holds is
        // logged here and its sandbox refused (closed by the sweep below).
        let current = self.current();
        for r in self
            .control
            .list()
            .iter()
            .filter(|r| r.revoked.is_none() && r.expires > now)
        {
            if let Some(doc) = &r.inline_policy {
                let _ = current.inline(&r.id, &r.policy, doc);
            }
        }
        self.metrics.set_config_generation(number);
        self.sweep(true);
        Ok(number)
    }

    /// The sandbox's CA, for the names its policy under `generation` allows.
    pub(crate) fn ca(&self, generation: &Generation, sandbox: &Sandbox) -> Result<Arc<SandboxCa>, Arc<CaError>> {
        self.cas.get(
            &sandbox.id,
            generation.policy_for(sandbox, Some(&self.control)).as_deref(),
        )
    }

    /// Whether `sandbox` may still use cordon under `generation`, and if not, why.
    pub fn entitled(&self, generation: &Generation, sandbox: &Sandbox) -> Result<(), Closed> {
        if self.violations.suspended(&sandbox.id) {
            return Err(Closed::Revoked);
        }
        match &sandbox.origin {
            Origin::Config => match generation.identities.get(&sandbox.id) {
                Some(now) if now.policy == sandbox.policy && now.user == sandbox.user => Ok(()),
                _ => Err(Closed::Removed),
            },
            Origin::Api { .. } => {
                self.control.check(sandbox, control::now())?;
                match generation.policy_for(sandbox, Some(&self.control)) {
                    Some(_) => Ok(()),
                    None => Err(Closed::Removed),
                }
            }
        }
    }

    /// Close the sessions of sandboxes no longer entitled; with `redecide`, also tunnels whose destination
    /// the policy no longer allows.
    pub(crate) fn sweep(&self, redecide: bool) {
        let generation = self.current();
        let allowed = |sandbox: &Sandbox, target: &Target, mode: TlsMode| {
            generation.policy_for(sandbox, Some(&self.control)).is_some_and(|p| {
                let d = p.decide(Question::connect(target));
                // Report mode lets a destination no rule names through, intercepted (as the pipeline does).
                let now = d.rule.and_then(|i| p.rules.get(i)).map(|r| r.tls).unwrap_or_default();
                d.allowed && now == mode
            })
        };
        let tunnel_check: Option<TunnelCheck<'_>> = if redecide { Some(&allowed) } else { None };
        let closed = self.sessions.sweep(|s| self.entitled(&generation, s), tunnel_check);
        for (id, _) in closed {
            self.leaves.invalidate_sandbox(&id);
        }
        // Held asks and standing grants end with their sandbox's incarnation and with the rule that asked.
        self.approvals.sweep(|sandbox, rule, fingerprint| {
            self.entitled(&generation, sandbox).is_ok()
                && generation
                    .policy_for(sandbox, Some(&self.control))
                    .is_some_and(|p| p.rules.get(rule).is_some_and(|r| r.fingerprint() == fingerprint))
        });
    }

    /// The PostgreSQL store, when state is shared through one.
    pub(crate) fn shared(&self) -> Option<&Arc<SharedStore>> {
        self.shared.as_ref()
    }

    /// Byte counts shared with the other replicas, which budgets are enforced on (with a shared store).
    fn shared_bytes(&self) -> Option<Arc<SharedBytes>> {
        self.shared.as_ref().map(|s| s.bytes.clone())
    }
}

/// Act on each threshold the violation watch reports ([`act`]), until the state is dropped.
async fn enforce(state: Weak<ProxyState>, mut triggered: UnboundedReceiver<Trigger>) {
    while let Some(t) = triggered.recv().await {
        let Some(state) = state.upgrade() else { return };
        // A task per action: a slow store write holds up no other, and a panic leaves the rest enforced.
        tokio::spawn(act(state, t));
    }
}

/// Revoke the sandbox (in the store for a run-time one; refused in memory if the store cannot take it, and for
/// a declared one) or hold it, deny its held requests and drop its grants, close what it may no longer keep
/// open, and have the watch announce it.
async fn act(state: Arc<ProxyState>, t: Trigger) {
    let runtime = state.control.get(&t.sandbox).is_some_and(|r| r.revoked.is_none());
    match t.action {
        ViolationAction::Revoke if runtime => {
            let (s, id) = (state.clone(), t.sandbox.clone());
            let revoked = tokio::task::spawn_blocking(move || s.control.revoke_sandbox(&id, control::now())).await;
            if !matches!(revoked, Ok(Ok(_))) {
                tracing::error!(sandbox = %t.sandbox, "on_violation: the store did not take the revocation; refused in memory");
                state.violations.mark(&t.sandbox, ViolationAction::Revoke);
            }
        }
        action => state.violations.mark(&t.sandbox, action),
    }
    // Its held requests are denied and its standing grants dropped; a revoked sandbox's connections close.
    state.approvals.forget_sandbox(&t.sandbox);
    state.sweep(false);
    crate::violation::announce(t, runtime, &state.audit, &state.metrics, state.webhook.as_ref());
}

/// Run the duty `make` starts under [`crate::supervise::forever`], counting its restarts in `state`'s metrics.
fn supervised<F, Fut>(state: &Arc<ProxyState>, name: &'static str, make: F)
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let metrics = Arc::downgrade(state);
    crate::supervise::forever(name, make, move |task| {
        if let Some(s) = metrics.upgrade() {
            s.metrics.background_restart(task);
        }
    });
}

/// The background duty of a running proxy: notice other replicas' writes to the store, close what
/// expired or was revoked, forget long-expired records. Stops when the state is dropped.
async fn maintain(state: Weak<ProxyState>) {
    let mut ticks: u64 = 0;
    loop {
        tokio::time::sleep(SWEEP_EVERY).await;
        let Some(s) = state.upgrade() else { return };
        let refreshed = {
            let s = s.clone();
            crate::supervise::blocking(move || s.control.refresh()).await
        };
        let changed = match refreshed {
            Some(Ok(changed)) => changed,
            Some(Err(e)) => {
                tracing::warn!("cannot read the sandbox store {}: {e}", s.control.location());
                false
            }
            None => false,
        };
        // Grants that ended (their lifetime, or their sandbox) narrow a policy: its tunnels are decided again.
        let generation = s.current();
        let grants_ended = s
            .control
            .access
            .sweep(control::now(), |w| s.entitled(&generation, w).is_ok());
        // Another process's writes may have changed a sandbox's policy: its tunnels are decided again.
        s.sweep(changed || grants_ended);
        ticks += 1;
        if ticks.is_multiple_of(20) {
            // Every 5 s: one record per address whose failed authentications were throttled.
            s.auth_bursts.flush(&s.audit);
        }
        if ticks.is_multiple_of(240) {
            let s2 = s.clone();
            // Records an hour past their expiry are of no use to anyone.
            let purged = crate::supervise::blocking(move || s2.control.purge(control::now() - 3600)).await;
            if let Some(Err(e)) = purged {
                tracing::warn!("cannot purge the sandbox store: {e}");
            }
            s.limits().housekeep();
            s.credential_budgets.housekeep();
            s.memory
                .model_ledger
                .0
                .housekeep(crate::limits::model_ledger::unix_now());
        }
        s.metrics.set_sandboxes(s.control.live_count(control::now()));
        s.metrics.set_approvals_pending(s.approvals.pending_count() as u64);
        if let Some(shared) = s.shared() {
            let live = s.replicas.load(Ordering::Relaxed) as u64;
            s.metrics.set_store(shared.state().state == "up", live);
        }
    }
}
