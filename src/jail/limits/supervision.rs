//! A jail under its limits: what holds them, the records of its start, of each limit it reaches and of its end
//! (with the sandbox and its user), and the count of cordon's own records for it that the idle limit reads.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::bounds::Bounds;
use super::cgroup;
use crate::audit::Sink;
use crate::config::jail::JailLimits;
use crate::config::jail::size;
use crate::locks::Unpoisoned;
use crate::names::SandboxId;

/// A jail under its limits: what holds them, where its records go, and whose it is.
pub(crate) struct Supervision {
    pub(crate) bounds: Bounds,
    sink: std::sync::Arc<dyn crate::audit::Sink>,
    sandbox: SandboxId,
    user: String,
    /// The records cordon wrote for the jail so far (see [`Counting`]).
    pub(super) records: Arc<AtomicU64>,
    /// What the cgroup had refused when last looked at (and recorded).
    seen: std::sync::Mutex<cgroup::Events>,
    /// Whether what the command runs and writes is recorded (`audit.activity`).
    activity: bool,
}

impl Supervision {
    /// The supervision of the jail for `sandbox` under `config` (its policy's limits, `cli`'s over them), and the
    /// sink cordon's own records for the jail go to (counted, for the idle limit).
    pub(crate) fn new(
        config: &crate::config::Config,
        sandbox: &SandboxId,
        cli: JailLimits,
        sink: std::sync::Arc<dyn crate::audit::Sink>,
    ) -> (Supervision, std::sync::Arc<dyn crate::audit::Sink>) {
        let spec = config.sandboxes.iter().find(|s| s.id == *sandbox);
        let policy = spec.map(|s| s.policy.as_str()).unwrap_or_default();
        let user = spec.map(|s| s.user.clone()).unwrap_or_default();
        let limits = config.jail.limits_for(policy).with(cli);
        let name = format!("cordon-jail-{sandbox}-{}", std::process::id());
        let bounds = Bounds::set_up(&name, limits, config.jail.cgroup.as_deref(), config.jail.grace);
        let records = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counting: std::sync::Arc<dyn crate::audit::Sink> = std::sync::Arc::new(Counting {
            inner: sink.clone(),
            count: records.clone(),
        });
        let s = Supervision {
            bounds,
            sink: counting.clone(),
            sandbox: sandbox.clone(),
            user,
            records,
            seen: std::sync::Mutex::default(),
            activity: config.jail.activity,
        };
        (s, counting)
    }

    fn of(&self) -> crate::audit::JailOf<'_> {
        crate::audit::JailOf {
            sandbox: self.sandbox.as_str(),
            user: &self.user,
        }
    }

    /// Say at start what bounds the jail (on stderr and in a `start` record).
    pub(crate) fn started(&self) {
        let line = self.bounds.line();
        eprintln!("cordon jail: limits: {line}");
        let event = crate::audit::JailRecord {
            event: "start",
            limit: None,
            value: None,
            mechanism: Some(line),
            count: None,
            detail: None,
            status: None,
        };
        crate::audit::jail_event(&self.sink, &self.of(), event);
    }

    /// Record that `limit` (of `value`, held by `mechanism`) was reached, `count` times if counted; and say it.
    pub(crate) fn limit(
        &self,
        limit: &'static str,
        value: String,
        mechanism: String,
        count: Option<u64>,
        detail: String,
    ) {
        tracing::warn!(sandbox = %self.sandbox, limit, %value, "cordon jail: {detail}");
        eprintln!("cordon jail: {limit} limit ({value}) reached: {detail}");
        let event = crate::audit::JailRecord {
            event: "limit",
            limit: Some(limit),
            value: Some(value),
            mechanism: Some(mechanism),
            count,
            detail: Some(detail),
            status: None,
        };
        crate::audit::jail_event(&self.sink, &self.of(), event);
    }

    /// Record what the cgroup refused since it was last looked at: processes OOM-killed, forks refused.
    pub(crate) fn check_events(&self) {
        let Some(c) = &self.bounds.cgroup else { return };
        let mut seen = self.seen.lock().unpoisoned();
        let now = c.events();
        if let (true, Some(m)) = (now.oom_kills > seen.oom_kills, self.bounds.limits.memory) {
            let n = now.oom_kills - seen.oom_kills;
            let detail = format!(
                "{n} process(es) OOM-killed at the memory limit ({} in all)",
                now.oom_kills
            );
            self.limit(
                "memory",
                size(m),
                format!("{} memory, no swap", c.name()),
                Some(n),
                detail,
            );
        }
        if let (true, Some(p)) = (now.fork_refusals > seen.fork_refusals, self.bounds.limits.pids) {
            let n = now.fork_refusals - seen.fork_refusals;
            let detail = format!(
                "fork refused at the process limit ({n} more time(s) counted, {} in all)",
                now.fork_refusals
            );
            self.limit("pids", p.to_string(), format!("{} pids", c.name()), Some(n), detail);
        }
        *seen = now;
    }

    /// Where the jail's activity records go and whose they are, when `audit.activity` is on.
    pub(crate) fn activity(&self) -> Option<(Arc<dyn Sink>, &SandboxId, &str)> {
        self.activity
            .then(|| (self.sink.clone(), &self.sandbox, self.user.as_str()))
    }

    /// Record how the jail ended (and what its cgroup refused since the last look).
    pub(crate) fn ended(&self, outcome: &Result<i32, String>) {
        self.check_events();
        let (status, detail) = match outcome {
            Ok(code) => (Some(*code), None),
            Err(e) => (None, Some(e.clone())),
        };
        let event = crate::audit::JailRecord {
            event: "end",
            limit: None,
            value: None,
            mechanism: None,
            count: None,
            detail,
            status,
        };
        crate::audit::jail_event(&self.sink, &self.of(), event);
    }
}

/// Counts the records cordon writes for the jail's sandbox on their way to `inner`.
struct Counting {
    inner: Arc<dyn Sink>,
    count: Arc<AtomicU64>,
}

impl Sink for Counting {
    fn write(&self, record: &crate::audit::Record) {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.inner.write(record);
    }
    fn health(&self) -> Option<&crate::audit::Health> {
        self.inner.health()
    }
}
