#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

fn limits() -> JailLimits {
    JailLimits {
        cpu: Some(1.5),
        memory: Some(64 * 1024 * 1024),
        pids: Some(512),
        ..JailLimits::default()
    }
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap()
}

#[test]
fn v2_limits_are_written_with_no_swap() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("memory.swap.max"), "max").unwrap();
    let c = Cgroup {
        version: Version::V2,
        dirs: vec![("", dir.path().to_path_buf())],
    };
    c.limit_v2(&limits()).unwrap();
    assert_eq!(read(dir.path(), "memory.max"), "67108864");
    assert_eq!(read(dir.path(), "memory.swap.max"), "0");
    assert_eq!(read(dir.path(), "pids.max"), "512");
    assert_eq!(read(dir.path(), "cpu.max"), "150000 100000");
    assert_eq!(c.procs_files(), vec![dir.path().join("cgroup.procs")]);
    std::fs::write(
        dir.path().join("memory.events"),
        "low 0\nhigh 0\nmax 7\noom 2\noom_kill 2\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("pids.events"), "max 31\n").unwrap();
    std::fs::write(dir.path().join("cpu.stat"), "usage_usec 2500000\nuser_usec 2000000\n").unwrap();
    assert_eq!(
        c.events(),
        Events {
            oom_kills: 2,
            fork_refusals: 31
        }
    );
    assert_eq!(c.cpu_used(), Some(Duration::from_millis(2500)));
}

#[test]
fn v1_limits_go_to_each_controllers_folder() {
    let root = tempfile::tempdir().unwrap();
    let dir = |c: &str| root.path().join(c);
    for c in ["memory", "pids", "cpu", "cpuacct"] {
        std::fs::create_dir(dir(c)).unwrap();
    }
    std::fs::write(dir("memory").join("memory.memsw.limit_in_bytes"), "").unwrap();
    let c = Cgroup {
        version: Version::V1,
        dirs: vec![
            ("memory", dir("memory")),
            ("pids", dir("pids")),
            ("cpu", dir("cpu")),
            ("cpuacct", dir("cpuacct")),
        ],
    };
    c.limit_v1(&limits()).unwrap();
    assert_eq!(read(&dir("memory"), "memory.limit_in_bytes"), "67108864");
    assert_eq!(read(&dir("memory"), "memory.memsw.limit_in_bytes"), "67108864");
    assert_eq!(read(&dir("pids"), "pids.max"), "512");
    assert_eq!(read(&dir("cpu"), "cpu.cfs_quota_us"), "150000");
    assert_eq!(read(&dir("cpu"), "cpu.cfs_period_us"), "100000");
    assert_eq!(c.procs_files().len(), 4);
    std::fs::write(
        dir("memory").join("memory.oom_control"),
        "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n",
    )
    .unwrap();
    std::fs::write(dir("cpuacct").join("cpuacct.usage"), "1500000000\n").unwrap();
    assert_eq!(c.events().oom_kills, 3);
    assert_eq!(c.cpu_used(), Some(Duration::from_millis(1500)));
}

#[test]
fn a_v1_hierarchy_the_jail_has_no_folder_in_is_left_to_the_rlimits() {
    // A user with a memory cgroup delegated, and no other: memory is held there, the rest is not written.
    let root = tempfile::tempdir().unwrap();
    let c = Cgroup {
        version: Version::V1,
        dirs: vec![("memory", root.path().to_path_buf())],
    };
    c.limit_v1(&limits()).unwrap();
    assert_eq!(read(root.path(), "memory.limit_in_bytes"), "67108864");
    assert!(!root.path().join("pids.max").exists() && !root.path().join("cpu.cfs_quota_us").exists());
    assert!(c.bounds("memory") && !c.bounds("cpu") && !c.bounds("pids"));
}

#[test]
fn quotas_have_the_kernels_floor() {
    assert_eq!(quota(0.5), 50_000);
    assert_eq!(quota(0.001), 1000);
    assert_eq!(quota(2.0), 200_000);
}

#[test]
fn stale_cgroups_are_the_sandboxs_own_whose_cordon_is_gone() {
    let parent = tempfile::tempdir().unwrap();
    let me = std::process::id();
    // Pid 1 is no cordon; this test's process stands in for a running one (its comm is the test binary's, so
    // only its own pid keeps it); other sandboxes' names and non-numbers are never the sandbox's.
    for name in [
        "cordon-jail-sb-1".to_owned(),
        format!("cordon-jail-sb-{me}"),
        "cordon-jail-sb-x-1".into(),
        "cordon-jail-sbx-1".into(),
        "cordon-jail-sb-".into(),
        "other".into(),
    ] {
        std::fs::create_dir(parent.path().join(name)).unwrap();
    }
    std::fs::write(parent.path().join("cordon-jail-sb-2"), "a file, not a cgroup").unwrap();
    // What `sandbox`'s stale cgroups are, among the ones made here.
    let stale = |sandbox: &str| -> Vec<PathBuf> {
        Cgroup::stale(sandbox, Some(parent.path()))
            .iter()
            .flat_map(|c| c.folders().map(Path::to_path_buf).collect::<Vec<_>>())
            .filter(|f| f.starts_with(parent.path()))
            .collect()
    };
    assert_eq!(stale("sb"), vec![parent.path().join("cordon-jail-sb-1")]);
    let x = stale("sb-x");
    assert_eq!(x, vec![parent.path().join("cordon-jail-sb-x-1")]);
}
