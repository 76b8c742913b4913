//! Admission: the limits a request, query, connection or tunnel must pass (rates, open caps, byte budgets),
//! the meter that counts a sandbox's bytes against its budget, and the count of throttled authentication
//! failures per address (audited as one record per burst instead of one per attempt). The request path asks
//! the limits only through here.

use crate::names::Incarnation;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use crate::identity::Closed;
use crate::identity::Sandbox;
use crate::limits::{LimitRefusal, Limits, Meter, OpenGuard};
use crate::session::leases::Sessions;
use crate::target::Target;

/// Counts the bytes of one sandbox against its budgets; when one is spent, everything the sandbox has open
/// is closed.
pub(crate) struct BudgetMeter {
    limits: Arc<Limits>,
    sessions: Arc<Sessions>,
    sandbox: Arc<Sandbox>,
    /// The sandbox's incarnation, which the budget is kept for (an id created again starts afresh).
    incarnation: Incarnation,
}

impl BudgetMeter {
    /// A meter for `sandbox`, or none when no byte budget is configured: then nothing is counted, and no
    /// shared lock is taken for every chunk a tunnel moves.
    pub(crate) fn for_sandbox(
        limits: Arc<Limits>,
        sessions: Arc<Sessions>,
        sandbox: Arc<Sandbox>,
    ) -> Option<Arc<dyn Meter>> {
        let spec = limits.spec();
        if spec.sandbox_upload.is_none() && spec.sandbox_download.is_none() {
            return None;
        }
        Some(Arc::new(BudgetMeter {
            limits,
            sessions,
            incarnation: sandbox.incarnation().clone(),
            sandbox,
        }))
    }
}

impl Meter for BudgetMeter {
    fn add(&self, up: u64, down: u64) -> bool {
        match self.limits.bytes(&self.incarnation, up, down) {
            Ok(()) => true,
            Err(refusal) => {
                // SECURITY: a spent byte budget closes every open connection and tunnel of the sandbox, not
                // only the one that crossed it.
                if self.sessions.close(&self.incarnation, Closed::Budget) {
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
    pub(crate) fn count(&self, ip: IpAddr) {
        *self
            .counts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(ip)
            .or_default() += 1;
    }

    /// One record per address with throttled attempts since the last flush.
    pub fn flush(&self, sink: &Arc<dyn crate::audit::Sink>) {
        let drained: Vec<(IpAddr, u64)> = self.counts.lock().unwrap_or_else(|p| p.into_inner()).drain().collect();
        for (ip, n) in drained {
            crate::audit::auth_failures(sink, ip, n, LimitRefusal::AUTH_THROTTLED);
        }
    }
}

/// The rates and the byte budget one request (or tunnel) of `sandbox` to `target` must pass; `None` for a
/// destination that could not be read (it still counts against the sandbox's and user's rates). Rates are
/// kept per id (a short burst allowance, not something spent); the byte budget per incarnation: one spent by
/// an earlier sandbox of the id is not the next one's.
pub(crate) fn request(limits: &Limits, sandbox: &Sandbox, target: Option<&Target>) -> Result<(), LimitRefusal> {
    query(limits, sandbox, target).and_then(|()| limits.budget(sandbox.incarnation()))
}

/// The rates one DNS query of `sandbox` must pass (bytes are not spent on it).
pub(crate) fn query(limits: &Limits, sandbox: &Sandbox, target: Option<&Target>) -> Result<(), LimitRefusal> {
    // Names are used as they are; only an IP destination is written out.
    let host: Option<std::borrow::Cow<'_, str>> = target.map(|t| match t.host.as_name() {
        Some(name) => name.into(),
        None => t.host.to_string().into(),
    });
    limits.request(&sandbox.id, &sandbox.user, host.as_deref())
}

/// A new connection or tunnel of `sandbox`: its connection rate, then a slot under the open caps of the
/// sandbox and its user, held by the guard.
pub(crate) fn tunnel(limits: &Limits, sandbox: &Sandbox) -> Result<OpenGuard, LimitRefusal> {
    limits.connection(&sandbox.id)?;
    limits.open(&sandbox.id, &sandbox.user)
}

/// The refusal an address (or an address naming sandbox `claim`) over its rate of failed authentications
/// gets, while its block lasts.
pub(crate) fn auth_blocked(limits: &Limits, source: IpAddr, claim: Option<&str>) -> Option<LimitRefusal> {
    limits.auth_blocked(source, claim)
}

/// Count one failed authentication from `source` naming sandbox `claim`; a refusal when this one put it over
/// a rate.
pub(crate) fn auth_failed(limits: &Limits, source: IpAddr, claim: Option<&str>) -> Result<(), LimitRefusal> {
    limits.auth_failure(source, claim)
}
