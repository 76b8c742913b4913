//! Admission: the limits a request, connection or tunnel must pass (rates, open caps, byte budgets), the
//! meter that counts a sandbox's bytes against its budget, and one audit record per burst of throttled
//! authentication failures instead of one per attempt.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use crate::audit::{self, Kind, Verdict};
use crate::identity::Closed;
use crate::identity::Sandbox;
use crate::limits::{Limits, Meter};
use crate::session::leases::Sessions;

/// Counts the bytes of one sandbox against its budgets; when one is spent, everything the sandbox has open
/// is closed.
pub struct BudgetMeter {
    limits: Arc<Limits>,
    sessions: Arc<Sessions>,
    sandbox: Arc<Sandbox>,
}

impl BudgetMeter {
    /// A meter for `sandbox`, or none when no byte budget is configured: then nothing is counted, and no
    /// shared lock is taken for every chunk a tunnel moves.
    pub fn for_sandbox(limits: Arc<Limits>, sessions: Arc<Sessions>, sandbox: Arc<Sandbox>) -> Option<Arc<dyn Meter>> {
        let spec = limits.spec();
        if spec.sandbox_upload.is_none() && spec.sandbox_download.is_none() {
            return None;
        }
        Some(Arc::new(BudgetMeter {
            limits,
            sessions,
            sandbox,
        }))
    }
}

impl Meter for BudgetMeter {
    fn add(&self, up: u64, down: u64) -> bool {
        match self.limits.bytes(&self.sandbox.id, up, down) {
            Ok(()) => true,
            Err(refusal) => {
                // SECURITY: a spent byte budget closes every open connection and tunnel of the sandbox, not
                // only the one that crossed it.
                if self.sessions.close(&self.sandbox.session_key(), Closed::Budget) {
                    tracing::info!(sandbox = %self.sandbox.id, "{}", refusal.message);
                }
                false
            }
        }
    }
}

/// Throttled authentication failures by source address, waiting to be audited as one record each.
#[derive(Default)]
pub struct AuthBursts {
    counts: Mutex<HashMap<IpAddr, u64>>,
}

impl AuthBursts {
    /// One more throttled attempt from `ip`.
    pub fn count(&self, ip: IpAddr) {
        *self
            .counts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(ip)
            .or_default() += 1;
    }

    /// One record per address with throttled attempts since the last flush.
    pub fn flush(&self, sink: &Arc<dyn audit::Sink>) {
        let drained: Vec<(IpAddr, u64)> = self.counts.lock().unwrap_or_else(|p| p.into_inner()).drain().collect();
        for (ip, n) in drained {
            let mut pending = audit::Pending::start(sink.clone(), SocketAddr::new(ip, 0), Kind::AuthFailures);
            let r = pending.record();
            r.decision = Verdict::Deny;
            r.status = Some(429);
            r.reason = Some(crate::limits::Refusal::AUTH_THROTTLED.to_string());
            r.count = Some(n);
            r.error = Some(format!(
                "{n} proxy authentication attempts from {ip} refused while it was throttled (limits.auth_failures)"
            ));
            pending.finish();
        }
    }
}
