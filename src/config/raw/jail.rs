//! The serde mirror of what bounds a jail: `jail:` (for every jail) and `policies.NAME.jail:` (a policy's own).

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;

use super::Whole;
use super::shapes::{Cpus, Duration, Size};

/// What one jail may spend; every key optional.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping of cpu, memory, pids, disk, wall and idle"
)]
pub(in crate::config) struct RawJailLimits {
    /// CPUs, e.g. `1.5`.
    #[schemars(with = "Option<Cpus>")]
    pub(crate) cpu: Option<serde_yaml_ng::Value>,
    /// Memory, e.g. `2GiB` (no swap).
    #[schemars(with = "Option<Size>")]
    pub(crate) memory: Option<String>,
    /// Processes and threads at once.
    pub(crate) pids: Option<Whole>,
    /// The size of each private writable folder (`/tmp`, `/var/tmp`, ...), e.g. `5GiB`.
    #[schemars(with = "Option<Size>")]
    pub(crate) disk: Option<String>,
    /// The longest the jail may run, e.g. `2h`.
    #[schemars(with = "Option<Duration>")]
    pub(crate) wall: Option<String>,
    /// How long it may do nothing, e.g. `15m`.
    #[schemars(with = "Option<Duration>")]
    pub(crate) idle: Option<String>,
}

/// `jail:`: the limits of every jail (a policy's `jail:` overrides them key by key), and how it is stopped.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(in crate::config) struct RawJail {
    /// CPUs, e.g. `1.5`.
    #[schemars(with = "Option<Cpus>")]
    pub(crate) cpu: Option<serde_yaml_ng::Value>,
    /// Memory, e.g. `2GiB` (no swap).
    #[schemars(with = "Option<Size>")]
    pub(crate) memory: Option<String>,
    /// Processes and threads at once.
    pub(crate) pids: Option<Whole>,
    /// The size of each private writable folder, e.g. `5GiB`.
    #[schemars(with = "Option<Size>")]
    pub(crate) disk: Option<String>,
    /// The longest a jail may run, e.g. `2h`.
    #[schemars(with = "Option<Duration>")]
    pub(crate) wall: Option<String>,
    /// How long a jail may do nothing, e.g. `15m`.
    #[schemars(with = "Option<Duration>")]
    pub(crate) idle: Option<String>,
    /// Between SIGTERM and SIGKILL when a limit stops the jail, e.g. `10s`.
    #[schemars(with = "Option<Duration>")]
    pub(crate) grace: Option<String>,
    /// The cgroup (v2) jails are made under; default: cordon's own.
    pub(crate) cgroup: Option<PathBuf>,
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
        };
        (limits, self.grace, self.cgroup)
    }
}
