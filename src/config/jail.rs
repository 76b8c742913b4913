//! What bounds a jail: CPUs, memory, processes, the private folders' size, wall-clock and idle time, for every
//! jail (`jail:`) and per policy (`policies.NAME.jail:`); how a jail is stopped; how many jails a user may run
//! at once (`limits.per_user.jails`); and whether what the command runs and writes is recorded
//! (`audit.activity`). As written and validated.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::errors::Errors;
use super::fields::{A_COUNT, bytes, duration, whole};
use super::scalars::Whole;
use super::shapes;

/// What one jail may spend; `None`: not bounded.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct JailLimits {
    /// CPUs (1.5: one and a half cores' time).
    pub(crate) cpu: Option<f64>,
    /// Memory, in bytes (swap none).
    pub(crate) memory: Option<u64>,
    /// Processes and threads at once.
    pub(crate) pids: Option<u64>,
    /// Bytes each private writable folder holds.
    pub(crate) disk: Option<u64>,
    /// The longest the jail may run.
    pub(crate) wall: Option<Duration>,
    /// How long it may use no CPU, move no bytes and write nothing.
    pub(crate) idle: Option<Duration>,
}

impl JailLimits {
    /// The built-in limits of a jail the configuration says nothing of: a fork flood and a full private `/tmp`
    /// (RAM) are bounded; the rest is not.
    pub(crate) const BUILT_IN: JailLimits = JailLimits {
        cpu: None,
        memory: None,
        pids: Some(4096),
        disk: Some(1024 * 1024 * 1024),
        wall: None,
        idle: None,
    };

    /// These limits, each one `over` sets replacing this one's.
    pub(crate) fn with(self, over: JailLimits) -> JailLimits {
        JailLimits {
            cpu: over.cpu.or(self.cpu),
            memory: over.memory.or(self.memory),
            pids: over.pids.or(self.pids),
            disk: over.disk.or(self.disk),
            wall: over.wall.or(self.wall),
            idle: over.idle.or(self.idle),
        }
    }
}

/// What keeps a jailed command apart from the host: `namespace` (bubblewrap's namespaces under a seccomp filter,
/// the default) or `gvisor` (gVisor's user-space kernel, `runsc`), both in the jail's network namespace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Isolation {
    /// Linux namespaces set up by bubblewrap.
    #[default]
    Namespace,
    /// gVisor's user-space kernel (`runsc`).
    Gvisor,
}

impl Isolation {
    /// `namespace` or `gvisor`, as written.
    pub(crate) fn parse(text: &str) -> Result<Isolation, String> {
        match text.trim() {
            "namespace" => Ok(Isolation::Namespace),
            "gvisor" => Ok(Isolation::Gvisor),
            other => Err(format!("{other:?} is not an isolation; write namespace or gvisor")),
        }
    }
}

/// `jail:`, each policy's `jail:`, `limits.per_user.jails` and `audit.activity`, validated.
#[derive(Debug, Clone)]
pub(crate) struct JailConfig {
    /// What keeps a jail apart from the host (`jail.isolation`), unless its policy says otherwise.
    pub(crate) isolation: Isolation,
    /// A policy's own `jail.isolation`.
    pub(crate) isolation_per_policy: BTreeMap<String, Isolation>,
    /// The limits of every jail: the built-in ones with `jail:` over them.
    pub(crate) defaults: JailLimits,
    /// A policy's own, key by key over the defaults.
    pub(crate) per_policy: BTreeMap<String, JailLimits>,
    /// Between SIGTERM and SIGKILL when a limit stops a jail.
    pub(crate) grace: Duration,
    /// The cgroup (v2) jails are made under; `None`: cordon's own.
    pub(crate) cgroup: Option<PathBuf>,
    /// Jails one user may run at once on this host; `None`: any number.
    pub(crate) per_user: Option<u32>,
    /// Whether every program a jail starts and every file it writes is an audit record (default: yes).
    pub(crate) activity: bool,
}

impl Default for JailConfig {
    fn default() -> Self {
        JailConfig {
            isolation: Isolation::Namespace,
            isolation_per_policy: BTreeMap::new(),
            defaults: JailLimits::BUILT_IN,
            per_policy: BTreeMap::new(),
            grace: Duration::from_secs(10),
            cgroup: None,
            per_user: None,
            activity: true,
        }
    }
}

impl JailConfig {
    /// What keeps a jail for a sandbox of `policy` apart from the host.
    pub(crate) fn isolation_for(&self, policy: &str) -> Isolation {
        self.isolation_per_policy.get(policy).copied().unwrap_or(self.isolation)
    }

    /// The limits of a jail for a sandbox of `policy`.
    pub(crate) fn limits_for(&self, policy: &str) -> JailLimits {
        match self.per_policy.get(policy) {
            Some(own) => self.defaults.with(*own),
            None => self.defaults,
        }
    }
}

/// The most CPUs a jail may be given (a typo such as `150` for `1.5` is caught).
const MOST_CPUS: f64 = 1024.0;

/// A number of CPUs: a positive number (written as a number or as text), at most [`MOST_CPUS`].
pub(crate) fn parse_cpus(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n > 0.0 && n <= MOST_CPUS => Ok(n),
        Ok(n) => Err(format!(
            "{n} is not a number of CPUs (more than 0, at most {MOST_CPUS})"
        )),
        Err(_) => Err(format!("{text:?} is not a number of CPUs; write e.g. 1.5")),
    }
}

/// A size as the configuration writes it: `2GiB`, `48MiB`, or bytes when it is no whole number of KiB.
pub(crate) fn size(bytes: u64) -> String {
    for (unit, name) in [
        (1u64 << 40, "TiB"),
        (1 << 30, "GiB"),
        (1 << 20, "MiB"),
        (1 << 10, "KiB"),
    ] {
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return format!("{}{name}", bytes / unit);
        }
    }
    format!("{bytes}B")
}

impl JailLimits {
    /// The limits that are set, as `cordon check` and the docs write them (`pids 4096, disk 1GiB`; `none`).
    pub(crate) fn summary(&self) -> String {
        let mut parts = Vec::new();
        if let Some(c) = self.cpu {
            parts.push(format!("cpu {c}"));
        }
        if let Some(m) = self.memory {
            parts.push(format!("memory {}", size(m)));
        }
        if let Some(p) = self.pids {
            parts.push(format!("pids {p}"));
        }
        if let Some(d) = self.disk {
            parts.push(format!("disk {}", size(d)));
        }
        if let Some(w) = self.wall {
            parts.push(format!("wall {}", humantime::format_duration(w)));
        }
        if let Some(i) = self.idle {
            parts.push(format!("idle {}", humantime::format_duration(i)));
        }
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(", ")
        }
    }
}

/// What one jail may spend; every key optional.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping of cpu, memory, pids, disk, wall, idle and isolation"
)]
pub(super) struct RawJailLimits {
    /// CPUs, e.g. `1.5`.
    #[schemars(with = "Option<shapes::Cpus>")]
    pub(crate) cpu: Option<serde_yaml_ng::Value>,
    /// Memory, e.g. `2GiB` (no swap).
    #[schemars(with = "Option<shapes::Size>")]
    pub(crate) memory: Option<String>,
    /// Processes and threads at once.
    pub(crate) pids: Option<Whole>,
    /// The size of each private writable folder (`/tmp`, `/var/tmp`, ...), e.g. `5GiB`.
    #[schemars(with = "Option<shapes::Size>")]
    pub(crate) disk: Option<String>,
    /// The longest the jail may run, e.g. `2h`.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) wall: Option<String>,
    /// How long it may do nothing, e.g. `15m`.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) idle: Option<String>,
    /// What keeps the jail apart from the host: `namespace` or `gvisor`.
    #[schemars(with = "Option<IsolationName>")]
    pub(crate) isolation: Option<String>,
}

/// `namespace` or `gvisor`.
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[expect(dead_code, reason = "the schema's shape of `isolation`")]
enum IsolationName {
    /// bubblewrap's namespaces.
    Namespace,
    /// gVisor's user-space kernel.
    Gvisor,
}

/// `jail:`: the limits of every jail (a policy's `jail:` overrides them key by key), and how it is stopped.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawJail {
    /// CPUs, e.g. `1.5`.
    #[schemars(with = "Option<shapes::Cpus>")]
    pub(crate) cpu: Option<serde_yaml_ng::Value>,
    /// Memory, e.g. `2GiB` (no swap).
    #[schemars(with = "Option<shapes::Size>")]
    pub(crate) memory: Option<String>,
    /// Processes and threads at once.
    pub(crate) pids: Option<Whole>,
    /// The size of each private writable folder, e.g. `5GiB`.
    #[schemars(with = "Option<shapes::Size>")]
    pub(crate) disk: Option<String>,
    /// The longest a jail may run, e.g. `2h`.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) wall: Option<String>,
    /// How long a jail may do nothing, e.g. `15m`.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) idle: Option<String>,
    /// Between SIGTERM and SIGKILL when a limit stops the jail, e.g. `10s`.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) grace: Option<String>,
    /// The cgroup (v2) jails are made under; default: cordon's own.
    pub(crate) cgroup: Option<PathBuf>,
    /// What keeps a jail apart from the host: `namespace` (default) or `gvisor`.
    #[schemars(with = "Option<IsolationName>")]
    pub(crate) isolation: Option<String>,
}

impl RawJail {
    /// Its limits, apart from how jails are stopped.
    pub(crate) fn split(self) -> (RawJailLimits, Option<String>, Option<PathBuf>) {
        let limits = RawJailLimits {
            cpu: self.cpu,
            memory: self.memory,
            pids: self.pids,
            disk: self.disk,
            wall: self.wall,
            idle: self.idle,
            isolation: self.isolation,
        };
        (limits, self.grace, self.cgroup)
    }
}

/// `jail:`, each policy's `jail:` (`(name, limits)`), `limits.per_user.jails` and `audit.activity`.
pub(super) fn jail(
    errs: &mut Errors,
    raw: Option<RawJail>,
    policies: Vec<(String, RawJailLimits)>,
    per_user: Option<Whole>,
    activity: Option<bool>,
) -> JailConfig {
    let mut c = JailConfig::default();
    if let Some(raw) = raw {
        let (mut limits, grace, cgroup) = raw.split();
        if let Some(i) = isolation_at(errs, "jail.isolation", limits.isolation.take()) {
            c.isolation = i;
        }
        c.defaults = c.defaults.with(limits_at(errs, "jail", limits));
        c.grace = duration(errs, "jail.grace", grace, c.grace);
        if let Some(path) = cgroup {
            if path.is_absolute() {
                c.cgroup = Some(path);
            } else {
                errs.at(
                    "jail.cgroup",
                    format!(
                        "{} is not an absolute path (e.g. /sys/fs/cgroup/cordon.slice)",
                        path.display()
                    ),
                );
            }
        }
    }
    for (policy, mut raw) in policies {
        let at = format!("policies.{policy}.jail.isolation");
        if let Some(i) = isolation_at(errs, &at, raw.isolation.take()) {
            c.isolation_per_policy.insert(policy.clone(), i);
        }
        let own = limits_at(errs, &format!("policies.{policy}.jail"), raw);
        c.per_policy.insert(policy, own);
    }
    if let Some(n) = whole(errs, "limits.per_user.jails", per_user, A_COUNT) {
        match u32::try_from(n) {
            Ok(n) if n >= 1 => c.per_user = Some(n),
            _ => errs.at(
                "limits.per_user.jails",
                format!("{n} must be at least 1 (leave it out for any number)"),
            ),
        }
    }
    c.activity = activity.unwrap_or(true);
    c
}

/// An isolation written at `at`, if it is one.
fn isolation_at(errs: &mut Errors, at: &str, raw: Option<String>) -> Option<Isolation> {
    Isolation::parse(&raw?).map_err(|e| errs.at(at, e)).ok()
}

/// One set of limits written at `at`.
fn limits_at(errs: &mut Errors, at: &str, raw: RawJailLimits) -> JailLimits {
    let cpu = raw.cpu.and_then(|v| cpus(errs, &format!("{at}.cpu"), &v));
    let pids = whole(errs, &format!("{at}.pids"), raw.pids, A_COUNT).and_then(|n| match u64::try_from(n) {
        Ok(n) if n >= 1 => Some(n),
        _ => {
            errs.at(format!("{at}.pids"), format!("{n} must be at least 1"));
            None
        }
    });
    let time = |errs: &mut Errors, key: &str, raw: Option<String>| {
        raw.map(|text| duration(errs, &format!("{at}.{key}"), Some(text), Duration::ZERO))
            .filter(|d| !d.is_zero())
    };
    JailLimits {
        cpu,
        memory: bytes(errs, &format!("{at}.memory"), raw.memory),
        pids,
        disk: bytes(errs, &format!("{at}.disk"), raw.disk),
        wall: time(errs, "wall", raw.wall),
        idle: time(errs, "idle", raw.idle),
    }
}

fn cpus(errs: &mut Errors, at: &str, v: &serde_yaml_ng::Value) -> Option<f64> {
    let text = match v {
        serde_yaml_ng::Value::Number(n) => n.to_string(),
        serde_yaml_ng::Value::String(s) => s.clone(),
        other => {
            errs.at(at, format!("expected a number of CPUs such as 1.5, not {other:?}"));
            return None;
        }
    };
    parse_cpus(&text).map_err(|e| errs.at(at, e)).ok()
}
