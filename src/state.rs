//! The run-time state assembled from a `Config`: what every connection shares.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::audit;
use crate::config::Config;
use crate::credentials::apply::Credentials;
use crate::identity::{Identities, Sandbox};
use crate::net::{Dialer, Guard};
use crate::policy::{HostPattern, Mode, Policy, TlsMode};
use crate::tls::ca::{CaError, CaStore, SandboxCa, Scope};
use crate::tls::cache::LeafCache;
use crate::tls::upstream::{self, Upstreams};

/// Shared by every connection of one running proxy.
pub struct ProxyState {
    /// The configuration in force.
    pub config: Arc<Config>,
    /// Sandbox identification.
    pub identities: Identities,
    /// Resolution, address guard and dialling.
    pub dialer: Dialer,
    /// Where audit records go.
    pub audit: Arc<dyn audit::Sink>,
    /// Per-sandbox CAs on disk.
    pub cas: CaStore,
    /// CAs loaded so far, by sandbox id.
    loaded_cas: moka::sync::Cache<String, Arc<SandboxCa>>,
    /// Leaf certificates by (sandbox, host).
    pub leaves: LeafCache,
    /// Pooled, verified connections to upstreams, per sandbox.
    pub upstreams: Upstreams,
    /// Credentials and placeholders.
    pub credentials: Credentials,
    /// Every connection and tunnel task, so shutdown can wait for them.
    pub tasks: TaskTracker,
    /// Cancelled when the drain deadline has passed: whatever is still open is cut.
    pub hard_stop: CancellationToken,
}

impl ProxyState {
    /// Assemble the state. `self_addrs` are cordon's own listening addresses, which the guard refuses
    /// to dial (a request to cordon itself would loop).
    pub fn new(
        config: Config,
        audit: Arc<dyn audit::Sink>,
        self_addrs: Vec<SocketAddr>,
    ) -> Result<Arc<ProxyState>, String> {
        let guard = Guard::new(
            config.network.allow_cidrs.clone(),
            config.network.dangerous_allow_metadata.clone(),
            self_addrs,
        );
        let dialer = Dialer::new(guard, config.network.hosts.clone(), config.timeouts.connect);
        let tls = upstream::client_config(&config.upstream.extra_roots)?;
        let validity = config.ca.leaf_validity;
        let credentials = Credentials::new(&config)?;
        Ok(Arc::new(ProxyState {
            credentials,
            identities: Identities::new(&config.sandboxes),
            upstreams: Upstreams::new(dialer.clone(), tls, config.upstream.pool_idle),
            dialer,
            audit,
            cas: CaStore::new(config.ca.dir.clone()),
            loaded_cas: moka::sync::Cache::new(100_000),
            leaves: LeafCache::new(config.ca.leaf_cache, validity / 4, validity),
            tasks: TaskTracker::new(),
            hard_stop: CancellationToken::new(),
            config: Arc::new(config),
        }))
    }

    /// The sandbox's CA: loaded from `ca.dir` (created on first need), then kept in memory.
    pub fn ca(&self, sandbox: &Sandbox) -> Result<Arc<SandboxCa>, Arc<CaError>> {
        self.loaded_cas.try_get_with(sandbox.id.clone(), || {
            let wanted = self
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

    /// The policy with this name.
    pub fn policy(&self, name: &str) -> Option<&Policy> {
        self.config.policies.get(name)
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
