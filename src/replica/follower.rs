//! What the replica module may change in the state above it.

use std::sync::Arc;

use super::store::SharedStore;
use crate::approval::Approvals;
use crate::control::Control;
use crate::tls::ca::SandboxCas;
use crate::tls::cache::LeafCache;

/// What an announcement from another replica may change in this one's state.
pub(crate) trait Follower: Send + Sync + 'static {
    /// Run-time sandboxes.
    fn control(&self) -> &Control;
    /// The sandboxes' CAs.
    fn cas(&self) -> &SandboxCas;
    /// Leaf certificates (a rotated CA's are not served again).
    fn leaves(&self) -> &LeafCache;
    /// Held requests and standing grants.
    fn approvals(&self) -> &Approvals;
    /// The store this replica shares.
    fn store(&self) -> Option<&Arc<SharedStore>>;
    /// Close what is no longer entitled; with `redecide`, also tunnels the policy no longer allows.
    fn sweep(&self, redecide: bool);
    /// The number of live replicas sharing the store is now `live`.
    fn set_replicas(&self, live: usize);
}
