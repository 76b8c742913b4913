//! A jail's cgroup: made under cordon's own cgroup (or `jail.cgroup`), the limits written into it, the jailed
//! command moved into it before it starts anything, and read back for CPU time and for what the kernel refused
//! (OOM kills, forks over the limit). cgroup v2 when cordon's cgroup there is writable and has the controllers;
//! else cgroup v1's memory, pids and cpu hierarchies where they are mounted and writable (hosts still on the
//! legacy or hybrid layout). Without either, [`Cgroup::make`] says why, and the limits fall back to rlimits.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::jail::JailLimits;

/// The CFS period cordon writes, in microseconds.
const PERIOD_US: u64 = 100_000;

/// Which cgroup interface bounds the jail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Version {
    /// The unified hierarchy.
    V2,
    /// The legacy per-controller hierarchies.
    V1,
}

/// A jail's cgroup: one folder (v2), or one per controller (v1).
#[derive(Debug)]
pub(crate) struct Cgroup {
    pub(crate) version: Version,
    /// (controller, folder): v2 has one folder for all, named `""`.
    dirs: Vec<(&'static str, PathBuf)>,
}

/// What the kernel refused in the cgroup so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Events {
    /// Processes the OOM killer ended.
    pub(crate) oom_kills: u64,
    /// Forks refused at `pids.max`.
    pub(crate) fork_refusals: u64,
}

fn write(dir: &Path, file: &str, value: &str) -> Result<(), String> {
    std::fs::write(dir.join(file), value)
        .map_err(|e| format!("cannot write {value:?} to {}: {e}", dir.join(file).display()))
}

/// The value of `key` in a cgroup file of `key value` lines (`memory.events`, `cpu.stat`, `memory.oom_control`).
fn keyed(dir: &Path, file: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(dir.join(file)).ok()?;
    text.lines()
        .filter_map(|l| l.split_once(' '))
        .find(|(k, _)| *k == key)
        .and_then(|(_, v)| v.trim().parse().ok())
}

/// Where jails' cgroups are made: the folder of v2 (`jail.cgroup`, else cordon's own cgroup there; or why there is
/// none), and cordon's own folder in each v1 hierarchy of a controller the jail uses.
struct Places {
    v2: Result<PathBuf, String>,
    v1: Vec<(&'static str, PathBuf)>,
}

impl Places {
    fn find(parent: Option<&Path>) -> Result<Places, String> {
        let mounts = procfs::process::Process::myself()
            .and_then(|p| Ok((p.cgroups()?, p.mountinfo()?)))
            .map_err(|e| format!("cannot read /proc/self/cgroup and mountinfo: {e}"))?;
        let (own, mountinfo) = mounts;
        let mount_of = |fs: &str, controller: Option<&str>| {
            mountinfo
                .iter()
                .find(|m| m.fs_type == fs && controller.is_none_or(|c| m.super_options.contains_key(c)))
                .map(|m| m.mount_point.clone())
        };
        let v2 = match (parent, mount_of("cgroup2", None)) {
            (Some(p), _) => Ok(p.to_path_buf()),
            (None, Some(root)) => {
                let at = own
                    .0
                    .iter()
                    .find(|c| c.hierarchy == 0)
                    .map(|c| c.pathname.clone())
                    .unwrap_or_default();
                Ok(root.join(at.trim_start_matches('/')))
            }
            (None, None) => Err("no cgroup v2 is mounted".to_owned()),
        };
        let mut v1: Vec<(&'static str, PathBuf)> = Vec::new();
        for controller in ["memory", "pids", "cpu", "cpuacct"] {
            let Some(root) = mount_of("cgroup", Some(controller)) else {
                continue;
            };
            let at = own
                .0
                .iter()
                .find(|c| c.controllers.iter().any(|k| k == controller))
                .map(|c| c.pathname.clone())
                .unwrap_or_default();
            let home = root.join(at.trim_start_matches('/'));
            if !v1.iter().any(|(_, h)| *h == home) {
                v1.push((controller, home));
            }
        }
        Ok(Places { v2, v1 })
    }
}

impl Cgroup {
    /// Make the cgroup `name` for `limits` under `parent` (v2; default cordon's own), or under cordon's own
    /// cgroups of v1; the reason there is none otherwise.
    pub(crate) fn make(name: &str, parent: Option<&Path>, limits: &JailLimits) -> Result<Cgroup, String> {
        let places = Places::find(parent)?;
        let v2_why = match &places.v2 {
            Ok(home) => match Cgroup::v2(&home.join(name), limits) {
                Ok(c) => return Ok(c),
                Err(e) if parent.is_some() => format!("jail.cgroup {}: {e}", home.display()),
                Err(e) => format!("cgroup v2 at {}: {e}", home.display()),
            },
            Err(why) => why.clone(),
        };
        let dirs: Vec<(&'static str, PathBuf)> = places.v1.into_iter().map(|(c, home)| (c, home.join(name))).collect();
        if dirs.is_empty() {
            return Err(format!(
                "{v2_why}, and no cgroup v1 memory, pids or cpu hierarchy is mounted"
            ));
        }
        // Each hierarchy where cordon may make the jail's folder (a user may have one delegated, memory alone, say):
        // what it holds is held there, the rest falls back to rlimits.
        let mut refused = Vec::new();
        let dirs: Vec<(&'static str, PathBuf)> = dirs
            .into_iter()
            .filter(|(controller, dir)| match std::fs::create_dir(dir) {
                Ok(()) => true,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => true,
                Err(e) => {
                    refused.push(format!("{controller}: cannot create {}: {e}", dir.display()));
                    false
                }
            })
            .collect();
        let made = Cgroup {
            version: Version::V1,
            dirs,
        };
        let why = |e: String| format!("{v2_why}; cgroup v1: {e}");
        if made.dirs.is_empty() {
            return Err(why(refused.join("; ")));
        }
        if let Err(e) = made.limit_v1(limits) {
            made.remove();
            return Err(why(e));
        }
        Ok(made)
    }

    /// The cgroups that jails named `cordon-jail-{sandbox}-{pid}` left where [`Cgroup::make`] makes them (under
    /// `parent`, or cordon's own cgroups of v2 and v1) whose `pid` is no longer running: what a jail killed outright
    /// left. With the jail's lock held, no other jail for the sandbox is starting or running.
    pub(crate) fn stale(sandbox: &str, parent: Option<&Path>) -> Vec<Cgroup> {
        let Ok(places) = Places::find(parent) else {
            return Vec::new();
        };
        // Each folder a jail's cgroup is made in: (controller, folder); v2's controller is "".
        let homes = places.v2.ok().map(|home| ("", home)).into_iter().chain(places.v1);
        let prefix = format!("cordon-jail-{sandbox}-");
        let mut stale = Vec::new();
        for (controller, home) in homes {
            let Ok(entries) = std::fs::read_dir(&home) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let Some(pid) = name.strip_prefix(&prefix).and_then(|p| p.parse::<i32>().ok()) else {
                    continue;
                };
                let running = pid == std::process::id() as i32
                    || std::fs::read(format!("/proc/{pid}/comm")).is_ok_and(|c| c.starts_with(b"cordon"));
                if !running && entry.path().is_dir() {
                    stale.push(Cgroup {
                        version: if controller.is_empty() {
                            Version::V2
                        } else {
                            Version::V1
                        },
                        dirs: vec![(controller, entry.path())],
                    });
                }
            }
        }
        stale
    }

    /// Where the cgroup is, for saying what was removed.
    pub(crate) fn folders(&self) -> impl Iterator<Item = &Path> {
        self.dirs.iter().map(|(_, d)| d.as_path())
    }

    /// A v2 cgroup at `dir`, its parent's controllers enabled for it.
    fn v2(dir: &Path, limits: &JailLimits) -> Result<Cgroup, String> {
        let parent = dir.parent().ok_or("no parent folder")?;
        let available = std::fs::read_to_string(parent.join("cgroup.controllers")).map_err(|e| e.to_string())?;
        let wanted: Vec<&str> = ["memory", "pids", "cpu"]
            .into_iter()
            .filter(|c| available.split_whitespace().any(|a| a == *c))
            .collect();
        if wanted.len() < 3 {
            return Err(format!(
                "the controllers delegated there are {available:?}, not memory, pids and cpu"
            ));
        }
        let enable: Vec<String> = wanted.iter().map(|c| format!("+{c}")).collect();
        write(parent, "cgroup.subtree_control", &enable.join(" "))?;
        let made = Cgroup {
            version: Version::V2,
            dirs: vec![("", dir.to_path_buf())],
        };
        made.create()?;
        if let Err(e) = made.limit_v2(limits) {
            made.remove();
            return Err(e);
        }
        Ok(made)
    }

    fn create(&self) -> Result<(), String> {
        for (_, dir) in &self.dirs {
            match std::fs::create_dir(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
            }
        }
        Ok(())
    }

    fn dir(&self, controller: &str) -> Option<&Path> {
        self.dirs
            .iter()
            .find(|(c, _)| *c == controller || c.is_empty())
            .map(|(_, d)| d.as_path())
    }

    fn limit_v2(&self, l: &JailLimits) -> Result<(), String> {
        let dir = &self.dirs[0].1;
        if let Some(m) = l.memory {
            write(dir, "memory.max", &m.to_string())?;
            if dir.join("memory.swap.max").exists() {
                write(dir, "memory.swap.max", "0")?;
            }
        }
        if let Some(p) = l.pids {
            write(dir, "pids.max", &p.to_string())?;
        }
        if let Some(c) = l.cpu {
            write(dir, "cpu.max", &format!("{} {PERIOD_US}", quota(c)))?;
        }
        Ok(())
    }

    /// Write each limit whose controller's folder the cgroup has (the others are held by rlimits).
    fn limit_v1(&self, l: &JailLimits) -> Result<(), String> {
        let need = |controller: &str| {
            self.dirs
                .iter()
                .find(|(c, _)| *c == controller)
                .map(|(_, d)| d.as_path())
        };
        if let (Some(m), Some(dir)) = (l.memory, need("memory")) {
            write(dir, "memory.limit_in_bytes", &m.to_string())?;
            // Memory plus swap no more than memory: no swap (when the kernel accounts swap).
            if dir.join("memory.memsw.limit_in_bytes").exists() {
                write(dir, "memory.memsw.limit_in_bytes", &m.to_string())?;
            }
        }
        if let (Some(p), Some(dir)) = (l.pids, need("pids")) {
            write(dir, "pids.max", &p.to_string())?;
        }
        if let (Some(c), Some(dir)) = (l.cpu, need("cpu")) {
            write(dir, "cpu.cfs_period_us", &PERIOD_US.to_string())?;
            write(dir, "cpu.cfs_quota_us", &quota(c).to_string())?;
        }
        Ok(())
    }

    /// The `cgroup.procs` files a process is written into to enter the cgroup (one per v1 hierarchy).
    pub(crate) fn procs_files(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|(_, d)| d.join("cgroup.procs")).collect()
    }

    /// CPU time the cgroup's processes used so far.
    pub(crate) fn cpu_used(&self) -> Option<Duration> {
        match self.version {
            Version::V2 => keyed(&self.dirs[0].1, "cpu.stat", "usage_usec").map(Duration::from_micros),
            Version::V1 => {
                let dir = self.dir("cpuacct")?;
                let ns: u64 = std::fs::read_to_string(dir.join("cpuacct.usage"))
                    .ok()?
                    .trim()
                    .parse()
                    .ok()?;
                Some(Duration::from_nanos(ns))
            }
        }
    }

    /// What the kernel refused so far.
    pub(crate) fn events(&self) -> Events {
        let oom = match self.version {
            Version::V2 => keyed(&self.dirs[0].1, "memory.events", "oom_kill"),
            Version::V1 => self
                .dir("memory")
                .and_then(|d| keyed(d, "memory.oom_control", "oom_kill")),
        };
        let forks = self.dir("pids").and_then(|d| keyed(d, "pids.events", "max"));
        Events {
            oom_kills: oom.unwrap_or(0),
            fork_refusals: forks.unwrap_or(0),
        }
    }

    /// Every process in the cgroup.
    pub(crate) fn pids(&self) -> Vec<i32> {
        let mut all: Vec<i32> = self
            .procs_files()
            .iter()
            .filter_map(|f| std::fs::read_to_string(f).ok())
            .flat_map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect::<Vec<_>>())
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }

    /// Kill every process in the cgroup (`cgroup.kill` on v2, each process on v1).
    pub(crate) fn kill_all(&self) {
        if self.version == Version::V2 && write(&self.dirs[0].1, "cgroup.kill", "1").is_ok() {
            return;
        }
        for pid in self.pids() {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
    }

    /// Remove the cgroup's folders (once its processes are gone; a few tries).
    pub(crate) fn remove(&self) {
        for (_, dir) in &self.dirs {
            for _ in 0..20 {
                match std::fs::remove_dir(dir) {
                    Ok(()) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                    Err(_) => std::thread::sleep(Duration::from_millis(50)),
                }
            }
        }
    }

    /// How the cgroup is named in the start-up line and the records, per controller.
    pub(crate) fn name(&self) -> &'static str {
        match self.version {
            Version::V2 => "cgroup v2",
            Version::V1 => "cgroup v1",
        }
    }

    /// Whether the limit of `controller` is enforced here (v1: the jail has a folder in its hierarchy).
    pub(crate) fn bounds(&self, controller: &str) -> bool {
        match self.version {
            Version::V2 => true,
            Version::V1 => self.dirs.iter().any(|(c, _)| *c == controller),
        }
    }
}

/// The CFS quota, in microseconds per [`PERIOD_US`], for `cpus` CPUs (at least 1 ms, the kernel's floor).
fn quota(cpus: f64) -> u64 {
    let q = (cpus * PERIOD_US as f64).round();
    if q.is_finite() && q >= 1000.0 { q as u64 } else { 1000 }
}

#[cfg(test)]
#[path = "cgroup_tests.rs"]
mod tests;
