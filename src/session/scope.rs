//! One client connection's ties to the sandboxes it has served: when any of them loses access (revoked,
//! expired, removed by a reload), the connection is closed.

use std::sync::{Arc, Mutex, PoisonError};

use tokio_util::sync::CancellationToken;

use super::admission;
use super::leases::{Lease, Sessions};
use crate::addr::OriginalDst;
use crate::identity::Sandbox;
use crate::limits::{Limits, OpenGuard, Refusal};

/// A client connection's registrations, one per sandbox incarnation it has served.
pub(crate) struct ConnScope {
    cut: CancellationToken,
    leases: Mutex<Vec<(String, Lease, Option<OpenGuard>)>>,
    /// For a connection that reached the transparent listener: where the sandbox was connecting to.
    pub(crate) original_dst: Option<OriginalDst>,
}

impl ConnScope {
    /// A connection that has served nobody yet.
    pub(crate) fn new(original_dst: Option<OriginalDst>) -> Arc<ConnScope> {
        Arc::new(ConnScope {
            cut: CancellationToken::new(),
            leases: Mutex::new(Vec::new()),
            original_dst,
        })
    }

    /// Cancelled when a sandbox the connection served loses access, or when the connection ends.
    pub(crate) fn cut(&self) -> &CancellationToken {
        &self.cut
    }

    /// Register this connection under `sandbox` (once per sandbox incarnation); with `count`, it is a new
    /// connection of the sandbox and must pass its connection rate and open caps.
    pub(crate) fn attach(
        &self,
        sessions: &Arc<Sessions>,
        limits: &Limits,
        sandbox: &Arc<Sandbox>,
        count: bool,
    ) -> Result<(), Refusal> {
        let key = sandbox.session_key();
        let mut leases = self.leases.lock().unwrap_or_else(PoisonError::into_inner);
        if leases.iter().any(|(k, _, _)| *k == key) {
            return Ok(());
        }
        let guard = if count {
            Some(admission::tunnel(limits, sandbox)?)
        } else {
            None
        };
        let lease = sessions.attach_connection(sandbox);
        let (revoked, cut) = (lease.token().clone(), self.cut.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = revoked.cancelled() => cut.cancel(),
                () = cut.cancelled() => {}
            }
        });
        leases.push((key, lease, guard));
        Ok(())
    }
}
