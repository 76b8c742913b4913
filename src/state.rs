//! The run-time state: what lives as long as cordon (CAs, leaves, run-time sandboxes, open sessions,
//! metrics) and the configuration generation in force, swapped whole on reload.
//!
//! Every request loads the generation once when it starts and finishes on it, so a reload never changes
//! the rules under a request in flight; the next request sees the new ones.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use arc_swap::ArcSwap;
use http::HeaderMap;
use secrecy::ExposeSecret;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::approval::Approvals;
use crate::approval::webhook::Webhook;
use crate::audit;
use crate::config::Config;
use crate::control::{self, Control};
use crate::credentials::apply::Credentials;
use crate::credentials::spec::SecretRef;
use crate::identity::Closed;
use crate::identity::{self, AuthFailure, Identities, Origin, Sandbox};
use crate::limits::Limits;
use crate::metrics::Metrics;
use crate::net::{Dialer, Guard};
use crate::policy::{HostPattern, Mode, Policy, Question, TlsMode};
use crate::session::admission::AuthBursts;
use crate::session::leases::{Sessions, TunnelCheck};
use crate::target::Target;
use crate::tls::ca::{CaError, CaStore, SandboxCa, Scope};
use crate::tls::cache::LeafCache;
use crate::upstream::pool::{self, Upstreams};

/// How often open sessions are checked against revocations and expiries, and the store for other
/// replicas' writes.
const SWEEP_EVERY: Duration = Duration::from_millis(250);

/// One configuration in force, with everything built from it.
pub struct Generation {
    /// 1 for the configuration cordon started with, then one more per successful reload.
    pub number: u64,
    /// The configuration.
    pub config: Arc<Config>,
    /// The sandboxes declared in it.
    pub identities: Identities,
    /// Resolution, address guard and dialling.
    pub dialer: Dialer,
    /// Pooled, verified connections to upstreams, per sandbox.
    pub upstreams: Upstreams,
    /// Credentials and placeholders.
    pub credentials: Credentials,
    admin_token: Option<[u8; 32]>,
}

impl Generation {
    async fn build(
        number: u64,
        config: Config,
        self_addrs: &[SocketAddr],
        metrics: &Arc<Metrics>,
    ) -> Result<Generation, String> {
        let guard = Guard::new(
            config.network.allow_cidrs.clone(),
            config.network.dangerous_allow_metadata.clone(),
            self_addrs.to_vec(),
        );
        let dialer = Dialer::new(guard, config.network.hosts.clone(), config.timeouts.connect);
        let tls = pool::client_config(&config.upstream.extra_roots)?;
        let mut credentials = Credentials::new(&config)?;
        credentials.set_metrics(metrics.clone());
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
    pub fn policy(&self, name: &str) -> Option<&Policy> {
        self.config.policies.get(name)
    }

    /// Whether `presented` is the admin API's bearer token.
    pub fn admin_token_matches(&self, presented: &str) -> bool {
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
    /// Per-sandbox CAs on disk.
    pub cas: CaStore,
    /// CAs loaded so far, by sandbox id.
    loaded_cas: moka::sync::Cache<String, Arc<SandboxCa>>,
    /// Leaf certificates by (sandbox, host).
    pub leaves: LeafCache,
    /// Sandboxes created at run time.
    pub control: Control,
    /// Open connections and tunnels by sandbox.
    pub sessions: Arc<Sessions>,
    /// What `/metrics` serves.
    pub metrics: Arc<Metrics>,
    /// Rates, caps and byte budgets (replaced on a reload that changes them).
    limits: ArcSwap<Limits>,
    /// Requests held for a human's approval, and standing grants.
    pub approvals: Arc<Approvals>,
    /// Throttled authentication failures waiting to be audited.
    pub auth_bursts: AuthBursts,
    /// Every connection and tunnel task, so shutdown can wait for them.
    pub tasks: TaskTracker,
    /// Cancelled when the drain deadline has passed: whatever is still open is cut.
    pub hard_stop: CancellationToken,
}

impl ProxyState {
    /// Assemble the state. `self_addrs` are cordon's own listening addresses, which the guard refuses
    /// to dial (a request to cordon itself would loop).
    pub async fn new(
        config: Config,
        sink: Arc<dyn audit::Sink>,
        self_addrs: Vec<SocketAddr>,
    ) -> Result<Arc<ProxyState>, String> {
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
                let client = crate::upstream::outbound::HttpClient::new(&config.upstream.extra_roots)?;
                Some(Webhook::new(w.url.clone(), secret, client))
            }
        };
        let approvals = Arc::new(Approvals::new(
            config.approval.max_pending,
            config.approval.timeout,
            webhook,
        ));
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
            cas: CaStore::new(config.ca.dir.clone()),
            loaded_cas: moka::sync::Cache::new(100_000),
            leaves: LeafCache::new(config.ca.leaf_cache, validity / 4, validity),
            control,
            sessions: Arc::new(Sessions::new(hard_stop.clone(), metrics.clone())),
            metrics,
            limits: ArcSwap::from_pointee(Limits::new(&config.limits.rates)),
            approvals,
            auth_bursts: AuthBursts::default(),
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
    pub fn limits(&self) -> Arc<Limits> {
        self.limits.load_full()
    }

    /// Swap in a new configuration, fully validated and built first; on any error the running one stays.
    /// Settings that only a restart can change are refused. Sessions the new configuration no longer
    /// allows are closed at once. Returns the new generation number.
    pub async fn reload(&self, config: Config) -> Result<u64, Vec<String>> {
        let _one_at_a_time = self.reloading.lock().await;
        let old = self.current();
        let mut errors = restart_only(&old.config, &config);
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
        self.loaded_cas.invalidate_all();
        self.metrics.set_config_generation(number);
        self.sweep(true);
        Ok(number)
    }

    /// Identify the sender of one request: a run-time sandbox by its signed credential, a declared one by
    /// token or source address.
    pub fn identify(
        &self,
        generation: &Generation,
        headers: &HeaderMap,
        client: IpAddr,
    ) -> Result<Arc<Sandbox>, AuthFailure> {
        match identity::credentials(headers)? {
            Some((id, secret)) if crate::identity::signed::looks_signed(&secret) => {
                let sandbox = self.control.verify(&id, &secret, control::now())?;
                if generation.identities.get(&id).is_some() {
                    // SECURITY: a declared sandbox's id cannot be claimed with a run-time credential.
                    return Err(AuthFailure::Invalid);
                }
                Ok(sandbox)
            }
            Some((id, secret)) => generation.identities.by_id_token(&id, &secret),
            None => generation.identities.by_source(client).ok_or(AuthFailure::Missing),
        }
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
    pub fn sweep(&self, redecide: bool) {
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
    }

    /// The sandbox's CA: loaded from `ca.dir` (created on first need), then kept in memory.
    pub fn ca(&self, generation: &Generation, sandbox: &Sandbox) -> Result<Arc<SandboxCa>, Arc<CaError>> {
        self.loaded_cas.try_get_with(sandbox.id.clone(), || {
            let wanted = generation
                .policy(&sandbox.policy)
                .map(scope_for)
                .unwrap_or(Scope::Unconstrained);
            let ca = self.cas.load_or_create(&sandbox.id, &wanted)?;
            if wanted.normalized().ok().as_ref() != Some(ca.scope()) {
                tracing::warn!(
                    sandbox = %sandbox.id,
                    "the CA on disk was issued for other names than the policy now allows; hosts outside it \
                     will be refused until `cordon ca rotate --sandbox {}` issues a new CA", sandbox.id
                );
            }
            Ok(ca)
        })
    }
}

/// What a reload cannot change while cordon runs.
fn restart_only(old: &Config, new: &Config) -> Vec<String> {
    let mut errors = Vec::new();
    let mut same = |what: &str, a: String, b: String| {
        if a != b {
            errors.push(format!("{what}: changed from {a} to {b}; this takes a restart"));
        }
    };
    same(
        "listen.proxy",
        old.listen.proxy.to_string(),
        new.listen.proxy.to_string(),
    );
    same(
        "listen.admin",
        format!("{:?}", old.listen.admin),
        format!("{:?}", new.listen.admin),
    );
    same(
        "listen.transparent",
        format!("{:?}", old.listen.transparent),
        format!("{:?}", new.listen.transparent),
    );
    same(
        "listen.transparent_tproxy",
        old.listen.transparent_tproxy.to_string(),
        new.listen.transparent_tproxy.to_string(),
    );
    same(
        "listen.dns",
        format!("{:?}", old.listen.dns),
        format!("{:?}", new.listen.dns),
    );
    same("audit.path", format!("{:?}", old.audit), format!("{:?}", new.audit));
    same(
        "limits.max_connections",
        old.limits.max_connections.to_string(),
        new.limits.max_connections.to_string(),
    );
    same(
        "ca.dir",
        old.ca.dir.display().to_string(),
        new.ca.dir.display().to_string(),
    );
    same(
        "control.store",
        format!("{:?}", old.control.store),
        format!("{:?}", new.control.store),
    );
    same(
        "control.signing_key",
        format!("{:?}", old.control.signing_key),
        format!("{:?}", new.control.signing_key),
    );
    errors
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

/// The names a sandbox's CA may sign for, from its policy: the hosts of its intercepted rules (`*.x` as the
/// subtree `x`) and the ranges of its CIDR rules. A report-mode policy may allow anything, so its CA is
/// unconstrained. A name a certificate cannot carry (e.g. with `_`) also leaves the CA unconstrained.
pub fn scope_for(policy: &Policy) -> Scope {
    if policy.mode == Mode::Report {
        return Scope::Unconstrained;
    }
    let mut dns = Vec::new();
    let mut ips = Vec::new();
    for rule in policy.rules.iter().filter(|r| r.tls == TlsMode::Intercept) {
        match &rule.host {
            Some(HostPattern::Exact(name)) | Some(HostPattern::Subdomains(name)) => dns.push(name.clone()),
            None => ips.extend(rule.cidrs.iter().copied()),
        }
    }
    let scope = Scope::Names { dns, ips };
    match scope.normalized() {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(policy = %policy.name, "the CA cannot be name-constrained ({e}); it will be unconstrained");
            Scope::Unconstrained
        }
    }
}
