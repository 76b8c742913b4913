//! Watching a running jail: what its cgroup refused (processes OOM-killed, forks over the limit) and its private
//! folders filling up, each an audit record as it happens; and its wall-clock and idle time, at either limit of
//! which the jail is stopped. Idle means, for the whole `idle` period: no CPU time used, no byte read or written
//! by any of its processes (which counts every byte through cordon: a jailed process reads or writes each one,
//! cordon being its only way out), no record cordon wrote for it, and no process started or ended.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::config::jail::size;

/// How often the cgroup's events and the private folders are looked at.
const TICK: Duration = Duration::from_millis(250);
/// How often activity is sampled for the idle limit.
const SAMPLE: Duration = Duration::from_secs(1);
/// The private folders whose fill is watched (as the command sees them).
const FOLDERS: [&str; 4] = ["tmp", "var/tmp", "dev/shm", "run"];

/// The exit status of a jail stopped at its wall-clock limit (as `timeout(1)`'s).
pub(crate) const WALL_EXIT: i32 = 124;
/// The exit status of a jail stopped for being idle.
pub(crate) const IDLE_EXIT: i32 = 123;

/// Why a watch stopped the jail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LimitStop {
    /// It ran for its `wall` limit.
    Wall,
    /// It did nothing for its `idle` limit.
    Idle,
}

impl LimitStop {
    /// The exit status cordon gives a jail it stopped.
    pub(crate) fn exit_code(self) -> i32 {
        match self {
            LimitStop::Wall => WALL_EXIT,
            LimitStop::Idle => IDLE_EXIT,
        }
    }
}

/// A running jail, as watched.
pub(crate) struct LimitWatch<'a> {
    pub(crate) of: &'a super::supervision::Supervision,
    /// The jail's first process: every process of the jail descends from it.
    pub(crate) root: i32,
}

/// What the jail did, as of one sample: equal samples a period apart mean it did nothing in between.
#[derive(Debug, PartialEq, Eq)]
struct ActivitySample {
    cpu: u128,
    io: u64,
    records: u64,
    processes: BTreeSet<i32>,
}

impl LimitWatch<'_> {
    /// The jail's processes.
    fn processes(&self) -> Vec<i32> {
        match &self.of.bounds.cgroup {
            Some(c) => c.pids(),
            None => crate::jail::procs::descendants(self.root),
        }
    }

    fn activity(&self) -> ActivitySample {
        let processes: BTreeSet<i32> = self.processes().into_iter().collect();
        let mut cpu: u128 = 0;
        let mut io: u64 = 0;
        for pid in &processes {
            let Ok(p) = procfs::process::Process::new(*pid) else {
                continue;
            };
            if let Ok(s) = p.stat() {
                cpu += u128::from(s.utime)
                    + u128::from(s.stime)
                    + u128::from(s.cutime.unsigned_abs())
                    + u128::from(s.cstime.unsigned_abs());
            }
            if let Ok(i) = p.io() {
                io = io.wrapping_add(i.rchar).wrapping_add(i.wchar);
            }
        }
        if let Some(used) = self.of.bounds.cgroup.as_ref().and_then(super::cgroup::Cgroup::cpu_used) {
            cpu = used.as_nanos();
        }
        ActivitySample {
            cpu,
            io,
            records: self.of.records.load(Ordering::Relaxed),
            processes,
        }
    }

    /// The private folders of the jail that are full now (looked at through a jailed process's root).
    fn full_folders(&self) -> Vec<&'static str> {
        let ours = std::fs::read_link("/proc/self/ns/mnt").ok();
        let Some(pid) = self
            .processes()
            .into_iter()
            .rev()
            .find(|p| std::fs::read_link(format!("/proc/{p}/ns/mnt")).ok() != ours)
        else {
            return Vec::new();
        };
        FOLDERS
            .into_iter()
            .filter(|f| {
                nix::sys::statvfs::statvfs(format!("/proc/{pid}/root/{f}").as_str())
                    .is_ok_and(|s| s.blocks() > 0 && s.blocks_available() == 0)
            })
            .collect()
    }

    /// Watch until a wall-clock or idle limit stops the jail (forever, when it has neither), recording what the
    /// kernel refused and the folders that fill up meanwhile.
    pub(crate) async fn run(self) -> LimitStop {
        let started = Instant::now();
        let limits = self.of.bounds.limits;
        let mut full: Vec<&'static str> = Vec::new();
        let mut last = self.activity();
        let (mut last_active, mut sampled) = (Instant::now(), Instant::now());
        let mut tick = tokio::time::interval(TICK);
        loop {
            tick.tick().await;
            self.of.check_events();
            if let Some(d) = limits.disk {
                let now = self.full_folders();
                for f in now.iter().filter(|f| !full.contains(f)) {
                    let detail = format!("/{f} is full: writes there fail with ENOSPC");
                    self.of.limit("disk", size(d), "tmpfs size".into(), None, detail);
                }
                full = now;
            }
            if let Some(w) = limits.wall
                && started.elapsed() >= w
            {
                let detail = format!(
                    "it ran for {}: stopping it (SIGTERM, then SIGKILL after {})",
                    humantime::format_duration(w),
                    humantime::format_duration(self.of.bounds.grace)
                );
                self.of.limit(
                    "wall",
                    humantime::format_duration(w).to_string(),
                    "cordon".into(),
                    None,
                    detail,
                );
                return LimitStop::Wall;
            }
            if let Some(i) = limits.idle
                && sampled.elapsed() >= SAMPLE
            {
                sampled = Instant::now();
                let now = self.activity();
                if now != last {
                    last = now;
                    last_active = Instant::now();
                } else if last_active.elapsed() >= i {
                    let detail = format!(
                        "it did nothing for {} (no CPU time, no bytes read or written, no process started or \
                         ended): stopping it (SIGTERM, then SIGKILL after {})",
                        humantime::format_duration(i),
                        humantime::format_duration(self.of.bounds.grace)
                    );
                    self.of.limit(
                        "idle",
                        humantime::format_duration(i).to_string(),
                        "cordon".into(),
                        None,
                        detail,
                    );
                    return LimitStop::Idle;
                }
            }
        }
    }
}
