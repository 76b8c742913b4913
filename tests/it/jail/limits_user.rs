//! What the jail without root may spend, run as a user without root (created by the test), through the binary:
//! no cgroup that user may write on this host, so processes and memory are bounded by rlimits (weaker, and
//! said so at start), the private folders by their tmpfs size, and wall-clock and idle time by cordon, each
//! with its record and exit status.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::rigs::client::hash;
use crate::rigs::jail::Within;
use crate::rigs::jail::{UserDir, chown_r, jail_as_user, user, user_dir};

/// A configuration for the user's jail in `d`, audit records to `d/audit.jsonl`.
fn config(d: &std::path::Path) -> std::path::PathBuf {
    let yaml = format!(
        "ca: {{ dir: {d}/cas }}\naudit: {{ path: {d}/audit.jsonl }}\njail: {{ grace: 1s }}\n\
         sandboxes:\n  - {{ id: laptop, user: dev, token_sha256: {h}, policy: agent }}\n\
         policies:\n  agent:\n    allow: []\n",
        d = d.display(),
        h = hash("unused"),
    );
    let path = d.join("cordon.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

fn records(d: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(d.join("audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["kind"] == "jail")
        .collect()
}

#[test]
fn the_jail_without_root_is_bounded_by_rlimits_tmpfs_sizes_and_cordons_clock() {
    if !crate::rigs::netns::available("the_jail_without_root_is_bounded_by_rlimits_tmpfs_sizes_and_cordons_clock") {
        return;
    }
    let (uid, gid, _) = user();
    let UserDir { dir, bin, project } = user_dir("jail-limits");
    let d = dir.path();
    let config = config(d);
    chown_r(d, uid, gid);
    let run = |extra: &[&str], script: &str| {
        let out = jail_as_user(&bin, &config, &project, extra, script).output_within();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // Processes: RLIMIT_NPROC; most of 300 forks are refused.
    let flood = "python3 -c 'import os, time\nn = 0\nfor _ in range(300):\n    try:\n        p = os.fork()\n    except \
                 OSError:\n        n += 1\n        continue\n    if p == 0:\n        time.sleep(2); os._exit(0)\nprint(\"refused\", n)'";
    let (code, out, err) = run(&["--pids", "48"], flood);
    assert_eq!(code, 0, "{out}{err}");
    let refused: u32 = out.split_whitespace().last().unwrap().parse().unwrap();
    assert!(refused > 200, "{out}");
    assert!(err.contains("pids 48 (RLIMIT_NPROC"), "{err}");
    assert!(err.contains("no cgroup: "), "says why there is no cgroup: {err}");
    // Memory: RLIMIT_AS; the allocation fails inside the command.
    let hog = "python3 -c 'b = bytearray(512 * 1024 * 1024); print(\"survived\")' 2>&1 | tail -1";
    let (code, out, err) = run(&["--memory", "256MiB"], hog);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("MemoryError"), "{out}");
    // Disk: the private /tmp holds at most its size.
    let dd = "dd if=/dev/zero of=/tmp/big bs=1M count=64 2>&1; du -m /tmp/big | cut -f1; sleep 1";
    let (_, out, err) = run(&["--disk", "8MiB"], dd);
    assert!(out.contains("No space left on device"), "{out}{err}");
    assert!(out.lines().last().unwrap().trim().parse::<u64>().unwrap() <= 8, "{out}");
    // Wall-clock and idle.
    let started = Instant::now();
    let (code, _, err) = run(&["--wall", "2s"], "sleep 86400");
    assert_eq!(code, 124, "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));
    let mut child = jail_as_user(&bin, &config, &project, &["--idle", "2s"], "read line; echo got $line")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let out = crate::rigs::jail::wait_within(child, "the jail");
    drop(stdin);
    assert_eq!(out.status.code(), Some(123), "{}", String::from_utf8_lossy(&out.stderr));

    let all = records(d);
    let starts: Vec<&str> = all
        .iter()
        .filter(|r| r["jail"]["event"] == "start")
        .map(|r| r["jail"]["mechanism"].as_str().unwrap())
        .collect();
    assert!(
        starts
            .iter()
            .any(|m| m.contains("memory 256MiB (RLIMIT_AS per process")),
        "{starts:#?}"
    );
    let limits: Vec<(&str, &str)> = all
        .iter()
        .filter(|r| r["jail"]["event"] == "limit")
        .map(|r| {
            (
                r["jail"]["limit"].as_str().unwrap(),
                r["jail"]["value"].as_str().unwrap(),
            )
        })
        .collect();
    for expected in [("disk", "8MiB"), ("wall", "2s"), ("idle", "2s")] {
        assert!(limits.contains(&expected), "{expected:?} in {limits:?}");
    }
    assert!(all.iter().all(|r| r["sandbox"] == "laptop" && r["user"] == "dev"));
}
