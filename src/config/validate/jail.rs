//! Validation of `jail:`, `policies.NAME.jail:`, `limits.per_user.jails` and `audit.activity`.

use std::time::Duration;

use super::fields::{A_COUNT, Errors, duration, whole};
use super::limits::bytes;
use crate::config::jail::{JailConfig, JailLimits, parse_cpus};
use crate::config::raw::{RawJail, RawJailLimits, Whole};

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
        let (limits, grace, cgroup) = raw.split();
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
    for (policy, raw) in policies {
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
