//! The run-time state assembled from a `Config`: what every connection shares.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::audit;
use crate::config::Config;
use crate::identity::Identities;
use crate::net::{Dialer, Guard};
use crate::policy::Policy;

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
    /// Every connection and tunnel task, so shutdown can wait for them.
    pub tasks: TaskTracker,
    /// Cancelled when the drain deadline has passed: whatever is still open is cut.
    pub hard_stop: CancellationToken,
}

impl ProxyState {
    /// Assemble the state. `self_addrs` are cordon's own listening addresses, which the guard refuses
    /// to dial (a request to cordon itself would loop).
    pub fn new(config: Config, audit: Arc<dyn audit::Sink>, self_addrs: Vec<SocketAddr>) -> Arc<ProxyState> {
        let guard = Guard::new(
            config.network.allow_cidrs.clone(),
            config.network.dangerous_allow_metadata.clone(),
            self_addrs,
        );
        let dialer = Dialer::new(guard, config.network.hosts.clone(), config.timeouts.connect);
        Arc::new(ProxyState {
            identities: Identities::new(&config.sandboxes),
            dialer,
            audit,
            tasks: TaskTracker::new(),
            hard_stop: CancellationToken::new(),
            config: Arc::new(config),
        })
    }

    /// The policy with this name.
    pub fn policy(&self, name: &str) -> Option<&Policy> {
        self.config.policies.get(name)
    }
}
