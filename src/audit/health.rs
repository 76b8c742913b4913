//! Whether audit records can be written right now. The audit thread says so after every write; the request
//! pipeline asks before it serves anything, so nothing is served that cannot be recorded.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The audit output's state as `/readyz` reports it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AuditState {
    /// `up` or `down`.
    pub state: &'static str,
    /// Unix seconds since when it is in this state.
    pub since: u64,
    /// Why records cannot be written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Records of refused requests not kept while the output was down, beyond what cordon holds in memory
    /// (since cordon started). The file says where with an `audit_gap` line.
    pub dropped: u64,
}

/// The audit output's health, shared by the audit thread and every request.
#[derive(Debug)]
pub struct Health {
    up: AtomicBool,
    dropped: AtomicU64,
    state: Mutex<AuditState>,
}

impl Default for Health {
    fn default() -> Self {
        Health {
            up: AtomicBool::new(true),
            dropped: AtomicU64::new(0),
            state: Mutex::new(AuditState {
                state: "up",
                since: now(),
                error: None,
                dropped: 0,
            }),
        }
    }
}

impl Health {
    /// Whether the last write succeeded (one atomic load: asked on every request).
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Acquire)
    }

    /// The state, for `/readyz` and the metrics.
    pub fn state(&self) -> AuditState {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner()).clone();
        s.dropped = self.dropped.load(Ordering::Relaxed);
        s
    }

    /// A write succeeded.
    pub(crate) fn up(&self) {
        if self.is_up() {
            return;
        }
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        tracing::info!("audit records are written again; requests are served");
        s.state = "up";
        s.since = now();
        s.error = None;
        self.up.store(true, Ordering::Release);
    }

    /// A write failed: requests are refused until one succeeds.
    pub(crate) fn down(&self, why: &std::io::Error) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if self.is_up() {
            tracing::error!(
                "audit records cannot be written ({why}); requests are refused (503 audit_unavailable) until they can"
            );
            s.state = "down";
            s.since = now();
            self.up.store(false, Ordering::Release);
        }
        s.error = Some(why.to_string());
    }

    /// A record was not kept.
    pub(crate) fn count_dropped(&self) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
