//! A jail's limits and what holds each: its cgroup, rlimits on the command, or nothing but cordon's watch.

use std::path::Path;
use std::time::Duration;

use super::cgroup::Cgroup;
use crate::config::jail::{JailLimits, size};

/// What holds `memory` without a cgroup, exactly: the address space of each process, so what it maps (a mapped
/// memfd included), not what the kernel holds for it unmapped.
pub(crate) const FALLBACK_MEMORY: &str = "RLIMIT_AS per process: address space only, so not a memfd's unmapped \
    contents, pipe or socket buffers, nor what several processes hold together";

/// A jail's limits and what holds them.
#[derive(Debug)]
pub(crate) struct Bounds {
    /// The limits.
    pub(crate) limits: JailLimits,
    /// The jail's cgroup, when cordon could make one.
    pub(crate) cgroup: Option<Cgroup>,
    /// Why there is none.
    pub(crate) no_cgroup: Option<String>,
    /// Between SIGTERM and SIGKILL when a limit stops the jail.
    pub(crate) grace: Duration,
}

impl Bounds {
    /// The bounds of the jail `name`: a cgroup for CPU, memory and processes when cordon can make one (under
    /// `parent`, else its own), else none and why.
    pub(crate) fn set_up(name: &str, limits: JailLimits, parent: Option<&Path>, grace: Duration) -> Bounds {
        let wants_cgroup = limits.cpu.is_some() || limits.memory.is_some() || limits.pids.is_some();
        let (cgroup, no_cgroup) = if wants_cgroup {
            match Cgroup::make(name, parent, &limits) {
                Ok(c) => (Some(c), None),
                Err(e) => (None, Some(e)),
            }
        } else {
            (None, None)
        };
        Bounds {
            limits,
            cgroup,
            no_cgroup,
            grace,
        }
    }

    /// Whether `controller`'s limit is held by the cgroup.
    fn by_cgroup(&self, controller: &str) -> Option<&'static str> {
        self.cgroup.as_ref().filter(|c| c.bounds(controller)).map(Cgroup::name)
    }

    /// Each limit with what holds it, for the start-up line and the start record.
    pub(crate) fn describe(&self) -> Vec<(&'static str, String, String)> {
        let l = &self.limits;
        let mut out = Vec::new();
        let weaker = |what: &str| format!("{what} (weaker: no cgroup cordon may write)");
        if let Some(c) = l.cpu {
            let how = match (self.by_cgroup("cpu"), l.wall) {
                (Some(by), _) => format!("{by} cpu quota"),
                (None, Some(_)) => weaker("RLIMIT_CPU per process: the CPU seconds of `cpu` x `wall`"),
                (None, None) => "not bounded: no cgroup cordon may write, and no wall limit for RLIMIT_CPU".into(),
            };
            out.push(("cpu", format!("{c}"), how));
        }
        if let Some(m) = l.memory {
            let how = match self.by_cgroup("memory") {
                Some(by) => format!("{by} memory, no swap"),
                None => weaker(FALLBACK_MEMORY),
            };
            out.push(("memory", size(m), how));
        }
        if let Some(p) = l.pids {
            let how = match self.by_cgroup("pids") {
                Some(by) => format!("{by} pids"),
                None => weaker("RLIMIT_NPROC, counting every process of the command's user"),
            };
            out.push(("pids", p.to_string(), how));
        }
        if let Some(d) = l.disk {
            out.push((
                "disk",
                size(d),
                "tmpfs size of each private folder (/tmp, /var/tmp, /var, /run, /dev/shm) and of the private home"
                    .into(),
            ));
        }
        if let Some(w) = l.wall {
            out.push((
                "wall",
                humantime::format_duration(w).to_string(),
                "cordon stops the jail".into(),
            ));
        }
        if let Some(i) = l.idle {
            out.push((
                "idle",
                humantime::format_duration(i).to_string(),
                "cordon stops the jail after this long with no CPU time, no bytes read or written (cordon's included) \
                 and no process started or ended"
                    .into(),
            ));
        }
        out
    }

    /// The start-up line's part about limits.
    pub(crate) fn line(&self) -> String {
        let parts: Vec<String> = self
            .describe()
            .into_iter()
            .map(|(what, value, how)| format!("{what} {value} ({how})"))
            .collect();
        let mut line = if parts.is_empty() {
            "none".to_owned()
        } else {
            parts.join(", ")
        };
        if let Some(why) = &self.no_cgroup {
            line.push_str(&format!("; no cgroup: {why}"));
        }
        line
    }

    /// What to run before the jail's first process so that it, and all it starts, is in the cgroup: a shell that
    /// writes its own pid into each `cgroup.procs` and then becomes the rest of the line.
    pub(crate) fn enter(&self) -> Vec<String> {
        let Some(c) = &self.cgroup else { return Vec::new() };
        let writes: Vec<String> = c
            .procs_files()
            .iter()
            .map(|f| {
                format!(
                    "echo $$ > {}",
                    shlex::try_quote(&f.to_string_lossy()).unwrap_or_default()
                )
            })
            .collect();
        vec![
            "/bin/sh".into(),
            "-c".into(),
            format!("{} && exec \"$@\"", writes.join(" && ")),
            "sh".into(),
        ]
    }

    /// The rlimits that stand in for what no cgroup holds, as `prlimit` before the command (empty when none).
    pub(crate) fn rlimits(&self) -> Vec<String> {
        let l = &self.limits;
        let mut a = Vec::new();
        if let (Some(p), None) = (l.pids, self.by_cgroup("pids")) {
            a.push(format!("--nproc={p}"));
        }
        if let (Some(m), None) = (l.memory, self.by_cgroup("memory")) {
            a.push(format!("--as={m}"));
        }
        if let (Some(c), Some(w), None) = (l.cpu, l.wall, self.by_cgroup("cpu")) {
            let seconds = (c * w.as_secs_f64()).ceil().max(1.0);
            a.push(format!("--cpu={seconds}"));
        }
        if a.is_empty() {
            return a;
        }
        let mut line = vec!["prlimit".to_owned()];
        line.extend(a);
        line.push("--".into());
        line
    }
}

impl Drop for Bounds {
    fn drop(&mut self) {
        if let Some(c) = &self.cgroup {
            c.kill_all();
            c.remove();
        }
    }
}
