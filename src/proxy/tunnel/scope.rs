//! One client connection's ties to the sandboxes it has served: when any of them loses access (revoked,
//! expired, removed by a reload), the connection is closed.

use crate::names::Incarnation;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::addr::OriginalDst;
use crate::identity::Sandbox;
use crate::limits::{LimitRefusal, Limits, OpenGuard, Waiting};
use crate::locks::Unpoisoned;
use crate::session::admission;
use crate::session::leases::{Lease, Sessions};

/// A client connection's registrations, one per sandbox incarnation it has served.
pub(crate) struct ConnScope {
    cut: CancellationToken,
    leases: Mutex<Vec<(Incarnation, Lease, Option<OpenGuard>)>>,
    /// For a connection that reached the transparent listener: where the sandbox was connecting to.
    pub(crate) original_dst: Option<OriginalDst>,
    /// The connection's place among its address's unauthenticated ones, given back once it authenticates.
    waiting: Mutex<Option<Waiting>>,
    /// Cancelled when the connection's first request head has been read.
    heard: CancellationToken,
}

impl ConnScope {
    /// A connection that has served nobody yet, holding `waiting` until it authenticates.
    pub(crate) fn new(original_dst: Option<OriginalDst>, waiting: Option<Waiting>) -> Arc<ConnScope> {
        Arc::new(ConnScope {
            cut: CancellationToken::new(),
            leases: Mutex::new(Vec::new()),
            original_dst,
            waiting: Mutex::new(waiting),
            heard: CancellationToken::new(),
        })
    }

    /// Cancelled once the connection's first request head has been read ([`ConnScope::heard_one`]).
    pub(crate) fn heard(&self) -> &CancellationToken {
        &self.heard
    }

    /// A request head has been read.
    pub(crate) fn heard_one(&self) {
        self.heard.cancel();
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
    ) -> Result<(), LimitRefusal> {
        let key = sandbox.incarnation();
        let mut leases = self.leases.lock().unpoisoned();
        if leases.iter().any(|(k, _, _)| k == key) {
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
        leases.push((key.clone(), lease, guard));
        // Authenticated: no longer one of its address's unauthenticated connections.
        drop(self.waiting.lock().unpoisoned().take());
        Ok(())
    }
}
