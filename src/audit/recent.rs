//! The latest records a person looks at in the console, kept as they are written: each sandbox's latest
//! refusals and the latest approval decisions. Bounded: a few refusals per sandbox, for at most
//! [`MOST_SANDBOXES`] sandboxes (the least recently refused go first) and a day; the last [`MOST_DECISIONS`]
//! decisions.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;

use super::health::Health;
use super::kind::{Kind, Verdict};
use super::record::Record;
use super::sink::Sink;

use crate::locks::Unpoisoned;
use crate::names::SandboxId;

/// Refusals kept per sandbox.
const PER_SANDBOX: usize = 10;
/// Sandboxes whose refusals are kept.
const MOST_SANDBOXES: u64 = 10_000;
/// Decisions kept.
const MOST_DECISIONS: usize = 50;

/// What the console shows of a record.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct Seen {
    /// When (RFC 3339).
    pub(crate) time: String,
    /// The sandbox.
    pub(crate) sandbox: Option<String>,
    /// Its user.
    pub(crate) user: Option<String>,
    /// The kind of record.
    pub(crate) kind: &'static str,
    /// The method.
    pub(crate) method: Option<String>,
    /// The host.
    pub(crate) host: Option<String>,
    /// The port.
    pub(crate) port: Option<u16>,
    /// The path (no query).
    pub(crate) path: Option<String>,
    /// The reason.
    pub(crate) reason: Option<String>,
    /// The status answered.
    pub(crate) status: Option<u16>,
    /// For a decision: who decided, allow or deny, and how far.
    pub(crate) by: Option<String>,
    /// For a decision: `allow` or `deny`.
    pub(crate) outcome: Option<String>,
    /// For a decision: `once`, `always` or `exact`.
    pub(crate) scope: Option<String>,
}

impl Seen {
    fn of(r: &Record) -> Seen {
        Seen {
            time: r.time.clone(),
            sandbox: r.sandbox.clone(),
            user: r.user.clone(),
            kind: r.kind.as_str(),
            method: r.method.clone(),
            host: r.host.clone(),
            port: r.port,
            path: r.path.clone(),
            reason: r.reason.clone(),
            status: r.status,
            by: r.approval.as_ref().and_then(|a| a.by.clone()),
            outcome: r.approval.as_ref().map(|a| a.outcome.clone()),
            scope: r.approval.as_ref().and_then(|a| a.scope.clone()),
        }
    }
}

/// A sink that keeps what the console shows, then passes every record on.
pub struct Recent {
    inner: Arc<dyn Sink>,
    refusals: moka::sync::Cache<String, Arc<Mutex<VecDeque<Seen>>>>,
    decisions: Mutex<VecDeque<Seen>>,
}

impl Recent {
    /// Keeping what passes on its way to `inner`.
    pub(crate) fn new(inner: Arc<dyn Sink>) -> Recent {
        Recent {
            inner,
            refusals: moka::sync::Cache::builder()
                .max_capacity(MOST_SANDBOXES)
                .time_to_idle(Duration::from_secs(24 * 3600))
                .build(),
            decisions: Mutex::new(VecDeque::new()),
        }
    }

    /// The latest refusals of `sandbox`, newest first.
    pub(crate) fn refusals(&self, sandbox: &SandboxId) -> Vec<Seen> {
        self.refusals
            .get(sandbox.as_str())
            .map(|q| q.lock().unpoisoned().iter().rev().cloned().collect())
            .unwrap_or_default()
    }

    /// The latest decisions of held requests, newest first.
    pub(crate) fn decisions(&self) -> Vec<Seen> {
        self.decisions.lock().unpoisoned().iter().rev().cloned().collect()
    }

    fn keep(&self, r: &Record) {
        let decided = r.kind == Kind::Admin
            && r.admin.as_ref().is_some_and(|a| a.action == "approval_decided")
            && r.decision != Verdict::Deny;
        if decided {
            let mut d = self.decisions.lock().unpoisoned();
            if d.len() == MOST_DECISIONS {
                d.pop_front();
            }
            d.push_back(Seen::of(r));
            return;
        }
        let refused = r.decision == Verdict::Deny && !matches!(r.kind, Kind::Admin | Kind::Violation);
        if let (true, Some(sandbox)) = (refused, r.sandbox.as_deref()) {
            let q = self.refusals.get_with(sandbox.to_owned(), Arc::default);
            let mut q = q.lock().unpoisoned();
            if q.len() == PER_SANDBOX {
                q.pop_front();
            }
            q.push_back(Seen::of(r));
        }
    }
}

impl Sink for Recent {
    fn write(&self, record: &Record) {
        self.inner.write(record);
        self.keep(record);
    }

    fn health(&self) -> Option<&Health> {
        self.inner.health()
    }
}

#[cfg(test)]
#[path = "recent_tests.rs"]
mod tests;
