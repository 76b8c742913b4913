//! Who has what open: every client connection and tunnel, registered under the sandbox (incarnation) it
//! serves, so that revoking, expiring or removing a sandbox — or a reload that takes a rule away — closes
//! them at once.

use crate::names::Incarnation;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

use crate::identity::{Closed, Sandbox};
use crate::metrics::Metrics;
use crate::names::SandboxId;
use crate::policy::TlsMode;
use crate::target::Target;

/// Whether a sandbox's policy would still open a tunnel to this destination in this TLS mode.
pub(crate) type TunnelCheck<'a> = &'a dyn Fn(&Sandbox, &Target, TlsMode) -> bool;

struct TunnelEntry {
    target: Target,
    mode: TlsMode,
    token: CancellationToken,
}

struct SandboxConnections {
    sandbox: Arc<Sandbox>,
    token: CancellationToken,
    conns: usize,
    tunnels: HashMap<u64, TunnelEntry>,
}

/// The registry of open connections and tunnels by sandbox.
pub(crate) struct Sessions {
    inner: Mutex<HashMap<Incarnation, SandboxConnections>>,
    next: AtomicU64,
    root: CancellationToken,
    metrics: Arc<Metrics>,
}

/// One registered connection or tunnel; deregisters when dropped. Its token is cancelled when the sandbox
/// loses access (or, for a tunnel, when its destination does).
pub(crate) struct Lease {
    sessions: Arc<Sessions>,
    key: Incarnation,
    sandbox: SandboxId,
    tunnel: Option<(u64, &'static str)>,
    token: CancellationToken,
}

impl Lease {
    /// Cancelled when this connection or tunnel must close.
    pub(crate) fn token(&self) -> &CancellationToken {
        &self.token
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut map = self.sessions.lock();
        let empty = match map.get_mut(&self.key) {
            Some(s) => {
                match self.tunnel {
                    Some((n, _)) => {
                        s.tunnels.remove(&n);
                    }
                    None => s.conns = s.conns.saturating_sub(1),
                }
                s.conns == 0 && s.tunnels.is_empty()
            }
            None => false,
        };
        if empty {
            map.remove(&self.key);
        }
        drop(map);
        let metrics = &self.sessions.metrics;
        match self.tunnel {
            Some((_, mode)) => metrics.tunnel_closed(&self.sandbox, mode),
            None => metrics.connection_closed(&self.sandbox),
        }
        if empty {
            metrics.forget_sandbox(&self.sandbox);
        }
    }
}

impl Sessions {
    /// An empty registry; every token is a child of `root` (cancelled at the drain deadline).
    pub(crate) fn new(root: CancellationToken, metrics: Arc<Metrics>) -> Sessions {
        Sessions {
            inner: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            root,
            metrics,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Incarnation, SandboxConnections>> {
        // A panic while holding this lock leaves counts that are at worst off by one; keep serving.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn session<'a>(
        &self,
        map: &'a mut HashMap<Incarnation, SandboxConnections>,
        sandbox: &Arc<Sandbox>,
    ) -> &'a mut SandboxConnections {
        map.entry(sandbox.incarnation().clone())
            .or_insert_with(|| SandboxConnections {
                sandbox: sandbox.clone(),
                token: self.root.child_token(),
                conns: 0,
                tunnels: HashMap::new(),
            })
    }

    /// Register a client connection that has served this sandbox.
    pub(crate) fn attach_connection(self: &Arc<Self>, sandbox: &Arc<Sandbox>) -> Lease {
        let mut map = self.lock();
        let s = self.session(&mut map, sandbox);
        s.conns += 1;
        let token = s.token.clone();
        drop(map);
        self.metrics.connection_opened(&sandbox.id);
        Lease {
            sessions: self.clone(),
            key: sandbox.incarnation().clone(),
            sandbox: sandbox.id.clone(),
            tunnel: None,
            token,
        }
    }

    /// Register a tunnel of this sandbox to `target`, opened in TLS mode `mode`.
    pub(crate) fn open_tunnel(self: &Arc<Self>, sandbox: &Arc<Sandbox>, target: &Target, mode: TlsMode) -> Lease {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let mut map = self.lock();
        let s = self.session(&mut map, sandbox);
        let token = s.token.child_token();
        s.tunnels.insert(
            n,
            TunnelEntry {
                target: target.clone(),
                mode,
                token: token.clone(),
            },
        );
        drop(map);
        self.metrics.tunnel_opened(&sandbox.id, mode.as_str());
        Lease {
            sessions: self.clone(),
            key: sandbox.incarnation().clone(),
            sandbox: sandbox.id.clone(),
            tunnel: Some((n, mode.as_str())),
            token,
        }
    }

    /// Close everything of each sandbox `check` finds no longer entitled (returning why); with
    /// `tunnel_allowed`, also close each tunnel its sandbox's policy would no longer open as it is: its
    /// destination refused, or opened in the other TLS mode.
    /// Returns the sandboxes closed, with why.
    pub(crate) fn sweep(
        &self,
        check: impl Fn(&Sandbox) -> Result<(), Closed>,
        tunnel_allowed: Option<TunnelCheck<'_>>,
    ) -> Vec<(SandboxId, Closed)> {
        let mut closed = Vec::new();
        let mut map = self.lock();
        map.retain(|_, s| match check(&s.sandbox) {
            Err(why) => {
                s.token.cancel();
                closed.push((s.sandbox.id.clone(), why));
                false
            }
            Ok(()) => {
                if let Some(allowed) = tunnel_allowed {
                    // SECURITY: a tunnel opened under one TLS mode closes when its rule now says the other.
                    for t in s.tunnels.values().filter(|t| !allowed(&s.sandbox, &t.target, t.mode)) {
                        tracing::info!(sandbox = %s.sandbox.id, target = %t.target, mode = t.mode.as_str(),
                            "closing a tunnel: the policy would no longer open it (destination refused, or \
                             the other TLS mode)");
                        t.token.cancel();
                    }
                }
                true
            }
        });
        drop(map);
        for (id, why) in &closed {
            tracing::info!(sandbox = %id, reason = why.code(), "closed the sandbox's open connections and tunnels");
            self.metrics.sandbox_closed(why.code());
        }
        closed
    }

    /// Close everything registered under `key` (a sandbox's session key) at once. False if nothing was open.
    pub(crate) fn close(&self, key: &Incarnation, why: Closed) -> bool {
        let removed = self.lock().remove(key);
        match removed {
            Some(s) => {
                s.token.cancel();
                tracing::info!(sandbox = %s.sandbox.id, reason = why.code(), "closed the sandbox's open connections and tunnels");
                self.metrics.sandbox_closed(why.code());
                true
            }
            None => false,
        }
    }

    /// Open connections and tunnels of every incarnation of sandbox `id`.
    pub(crate) fn counts(&self, id: &SandboxId) -> (usize, usize) {
        self.lock()
            .values()
            .filter(|s| s.sandbox.id == *id)
            .fold((0, 0), |(c, t), s| (c + s.conns, t + s.tunnels.len()))
    }
}

#[cfg(test)]
#[path = "leases_tests.rs"]
mod tests;
