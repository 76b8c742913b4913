//! The run-time state: what lives as long as cordon (CAs, leaves, run-time sandboxes, open sessions,
//! metrics) and the configuration generation in force, swapped whole on reload.
//!
//! Every request loads the generation once when it starts and finishes on it, so a reload never changes
//! the rules under a request in flight; the next request sees the new ones.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use arc_swap::ArcSwap;
use secrecy::ExposeSecret;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::approval::Approvals;
use crate::audit;
use crate::config::Config;
use crate::config::credentials::SecretRef;
use crate::control::{self, Control};
use crate::credentials::apply::Credentials;
use crate::identity::Closed;
use crate::identity::{Identities, Origin, Sandbox};
use crate::limits::Limits;
use crate::metrics::Metrics;
use crate::net::{Dialer, Guard};
use crate::policy::{Policy, Question};
use crate::session::admission::AuthBursts;
use crate::session::leases::{Sessions, TunnelCheck};
use crate::target::Target;
use crate::tls::ca::{CaError, SandboxCa};
use crate::tls::cache::LeafCache;
use crate::tls::cas::SandboxCas;
use crate::upstream::pool::{self, Upstreams};

/// How often open sessions are checked against revocations and expiries, and the store for other
/// replicas' writes.
const SWEEP_EVERY: Duration = Duration::from_millis(250);

/// One configuration in force, with everything built from it.
pub struct Generation {
    /// 1 for the configuration cordon started with, then one more per successful reload.
    pub number: u64,
    /// The configuration.
    pub(crate) config: Arc<Config>,
    /// The sandboxes declared in it.
    pub(crate) identities: Identities,
    /// Resolution, address guard and dialling.
    pub(crate) dialer: Dialer,
    /// Pooled, verified connections to upstreams, per sandbox.
    pub(crate) upstreams: Upstreams,
    /// Credentials and placeholders.
    pub(crate) credentials: Credentials,
    admin_token: Option<[u8; 32]>,
}

impl Generation {
    async fn build(
        number: u64,
        config: Config,
        self_addrs: &[SocketAddr],
        metrics: &Arc<Metrics>,
    ) -> Result<Generation, String> {
        let mut credentials = Credentials::new(&config)?;
        credentials.set_metrics(metrics.clone());
        // The exfiltration scan knows the stored secrets before any request has used them.
        credentials.learn_stored().await;
        let admin_token = match &config.control.admin_token {
            None => None,
            Some(r) => {
                generate_if_file(r)?;
                let token = credentials
                    .secrets()
                    .stored(r)
                    .await
                    .map_err(|e| format!("control.admin_token: {e}"))?;
                Some(Sha256::digest(token.expose_secret().as_bytes()).into())
            }
        };
        Generation::assemble(number, config, self_addrs, credentials, admin_token)
    }

    /// The generation a dry run (`cordon explain`) decides on: built from `config` as a running cordon
    /// listening on `listen.proxy` would build it, without a file read or made and no secret source opened.
    pub(crate) fn dry(config: Config) -> Result<Generation, String> {
        let credentials = Credentials::inert(&config)?;
        let proxy = config.listen.proxy;
        Generation::assemble(0, config, &[proxy], credentials, None)
    }

    fn assemble(
        number: u64,
        config: Config,
        self_addrs: &[SocketAddr],
        credentials: Credentials,
        admin_token: Option<[u8; 32]>,
    ) -> Result<Generation, String> {
        let guard = Guard::new(
            config.network.allow_cidrs.clone(),
            config.network.dangerous_allow_metadata.clone(),
            self_addrs.to_vec(),
        );
        let dialer = Dialer::new(guard, config.network.hosts.clone(), config.timeouts.connect);
        let tls = pool::client_config(&config.upstream.extra_roots)?;
        Ok(Generation {
            number,
            identities: Identities::new(&config.sandboxes),
            upstreams: Upstreams::new(
                dialer.clone(),
                tls,
                config.upstream.pool_idle,
                config.timeouts.connect + config.timeouts.tls_handshake,
            ),
            dialer,
            credentials,
            admin_token,
            config: Arc::new(config),
        })
    }

    /// The policy with this name.
    pub(crate) fn policy(&self, name: &str) -> Option<&Policy> {
        self.config.policies.get(name)
    }

    /// Whether `presented` is the admin API's bearer token.
    pub(crate) fn admin_token_matches(&self, presented: &str) -> bool {
        let hash: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        // SECURITY: constant-time comparison of the admin token's hash.
        self.admin_token.is_some_and(|t| bool::from(hash.ct_eq(&t)))
    }
}

/// A `file:` secret cordon may create: made with a random value on first start.
fn generate_if_file(r: &SecretRef) -> Result<(), String> {
    if let SecretRef::File(path) = r
        && crate::secret_file::ensure_secret_file(path)?
    {
        tracing::info!("created {} with a new random secret (0600)", path.display());
    }
    Ok(())
}

/// Shared by every connection of one running proxy.
pub struct ProxyState {
    live: ArcSwap<Generation>,
    generations: AtomicU64,
    self_addrs: Vec<SocketAddr>,
    reloading: tokio::sync::Mutex<()>,
    /// Where audit records go (counted in the metrics on the way).
    pub audit: Arc<dyn audit::Sink>,
    /// Per-sandbox CAs, loaded from `ca.dir` on first need.
    pub(crate) cas: SandboxCas,
    /// Leaf certificates by (sandbox, host).
    pub(crate) leaves: LeafCache,
    /// Sandboxes created at run time.
    pub control: Control,
    /// Open connections and tunnels by sandbox.
    pub(crate) sessions: Arc<Sessions>,
    /// What `/metrics` serves.
    pub(crate) metrics: Arc<Metrics>,
    /// Rates, caps and byte budgets (replaced on a reload that changes them).
    limits: ArcSwap<Limits>,
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
        let key = match &config.control.signing_key {
            None => {
                tracing::warn!(
                    "control.signing_key is not set: run-time sandboxes' credentials are signed with a key that \
                     dies with this process, and no other replica accepts them"
                );
                None
            }
            Some(r) => {
                generate_if_file(r)?;
                let key = generation.credentials.secrets().stored(r).await;
                Some(key.map_err(|e| format!("control.signing_key: {e}"))?)
            }
        };
        let control = Control::open(config.control.store.as_deref(), key)?;
        if config.control.store.is_none() {
            tracing::info!("control.store is not set: sandboxes created at run time live in memory only");
        }
        let webhook_secret = match config.approval.webhook.as_ref().and_then(|w| w.secret.as_ref()) {
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
        let approvals = Arc::new(Approvals::configured(
            &config.approval,
            &config.upstream.extra_roots,
            webhook_secret,
        )?);
        let hard_stop = CancellationToken::new();
        let validity = config.ca.leaf_validity;
        metrics.set_config_generation(1);
        let state = Arc::new(ProxyState {
            live: ArcSwap::from_pointee(generation),
            generations: AtomicU64::new(1),
            self_addrs,
            reloading: tokio::sync::Mutex::new(()),
            audit: Arc::new(audit::Metered {
                inner: sink,
                metrics: metrics.clone(),
            }),
            cas: SandboxCas::new(config.ca.dir.clone()),
            leaves: LeafCache::new(config.ca.leaf_cache, validity / 4, validity),
            control,
            sessions: Arc::new(Sessions::new(hard_stop.clone(), metrics.clone())),
            metrics,
            limits: ArcSwap::from_pointee(Limits::new(&config.limits.rates)),
            approvals,
            auth_bursts: AuthBursts::default(),
            unauthenticated: Arc::default(),
            tasks: TaskTracker::new(),
            hard_stop,
        });
        tokio::spawn(maintain(Arc::downgrade(&state)));
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
        for (i, s) in config.sandboxes.iter().enumerate() {
            if self
                .control
                .get(&s.id)
                .is_some_and(|r| r.revoked.is_none() && r.expires > now)
            {
                errors.push(format!(
                    "sandboxes[{i}].id: {:?} is also a sandbox created at run time; revoke it first or choose another id",
                    s.id
                ));
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let number = self.generations.load(Ordering::SeqCst) + 1;
        let generation = Generation::build(number, config, &self.self_addrs, &self.metrics)
            .await
            .map_err(|e| vec![e])?;
        if generation.config.limits.rates != old.config.limits.rates {
            // New bounds start from fresh counters; open guards give their slots back to the old ones.
            self.limits
                .store(Arc::new(Limits::new(&generation.config.limits.rates)));
        }
        self.generations.store(number, Ordering::SeqCst);
        self.live.store(Arc::new(generation));
        // Name constraints are judged again against the new policies when each CA is next needed.
        self.cas.reload();
        self.metrics.set_config_generation(number);
        self.sweep(true);
        Ok(number)
    }

    /// The sandbox's CA, for the names its policy under `generation` allows.
    pub(crate) fn ca(&self, generation: &Generation, sandbox: &Sandbox) -> Result<Arc<SandboxCa>, Arc<CaError>> {
        self.cas.get(&sandbox.id, generation.policy(&sandbox.policy))
    }

    /// Whether `sandbox` may still use cordon under `generation`, and if not, why.
    pub fn entitled(&self, generation: &Generation, sandbox: &Sandbox) -> Result<(), Closed> {
        match &sandbox.origin {
            Origin::Config => match generation.identities.get(&sandbox.id) {
                Some(now) if now.policy == sandbox.policy && now.user == sandbox.user => Ok(()),
                _ => Err(Closed::Removed),
            },
            Origin::Api { .. } => {
                self.control.check(sandbox, control::now())?;
                match generation.policy(&sandbox.policy) {
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
        let allowed = |sandbox: &Sandbox, target: &Target| {
            generation
                .policy(&sandbox.policy)
                .is_some_and(|p| p.decide(Question { target, request: None }).allowed)
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
                    .policy(&sandbox.policy)
                    .and_then(|p| p.rules.get(rule))
                    .is_some_and(|r| r.fingerprint() == fingerprint)
        });
    }
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
            tokio::task::spawn_blocking(move || s.control.refresh()).await
        };
        if let Ok(Err(e)) = refreshed {
            tracing::warn!("cannot read the sandbox store {}: {e}", s.control.location());
        }
        s.sweep(false);
        ticks += 1;
        if ticks.is_multiple_of(20) {
            // Every 5 s: one record per address whose failed authentications were throttled.
            s.auth_bursts.flush(&s.audit);
        }
        if ticks.is_multiple_of(240) {
            let s2 = s.clone();
            // Records an hour past their expiry are of no use to anyone.
            let purged = tokio::task::spawn_blocking(move || s2.control.purge(control::now() - 3600)).await;
            if let Ok(Err(e)) = purged {
                tracing::warn!("cannot purge the sandbox store: {e}");
            }
            s.limits().housekeep();
        }
        s.metrics.set_sandboxes(s.control.live_count(control::now()));
        s.metrics.set_approvals_pending(s.approvals.pending_count() as u64);
    }
}
