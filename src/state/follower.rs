//! How the replica reaches the state ([`crate::replica::Follower`]): what it reads, what it asks the state to
//! act on, and the share of the rate limits this replica enforces when the number of live replicas changes.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::ProxyState;
use crate::approval::Approvals;
use crate::control::Control;
use crate::limits::Limits;
use crate::replica::{Follower, SharedStore};
use crate::tls::ca::SandboxCas;
use crate::tls::cache::LeafCache;

impl Follower for ProxyState {
    fn control(&self) -> &Control {
        &self.control
    }

    fn cas(&self) -> &SandboxCas {
        &self.cas
    }

    fn leaves(&self) -> &LeafCache {
        &self.leaves
    }

    fn approvals(&self) -> &Approvals {
        &self.approvals
    }

    fn store(&self) -> Option<&Arc<SharedStore>> {
        self.shared()
    }

    fn sweep(&self, redecide: bool) {
        ProxyState::sweep(self, redecide);
    }

    /// When the number changed, this replica's share of the rate limits follows (from fresh counters, as after
    /// a reload that changes them).
    fn set_replicas(&self, live: usize) {
        let before = self.replicas.swap(live, Ordering::Relaxed);
        if before != live {
            let spec = self.current().config.limits.rates.share(live);
            tracing::info!(
                live,
                "live replicas changed: this replica enforces 1/{live} of each rate limit"
            );
            self.limits
                .store(Arc::new(Limits::new(&spec).with_shared_bytes(self.shared_bytes())));
        }
    }
}
