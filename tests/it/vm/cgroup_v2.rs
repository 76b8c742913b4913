//! The jail's limits on cgroup v2, through the binary, in a VM booted with the unified hierarchy alone (this host
//! and CI may mount v1 or a hybrid, so the v2 path would otherwise have only unit tests): a fork flood stops at
//! `pids`, a memory hog is OOM-killed, a busy loop gets the CPU quota, `dd` stops at the disk size, `sleep`
//! ends at the wall limit and an idle `read` at the idle limit, and a user's third jail at once is refused,
//! each with its exit status and its `kind: jail` record.
//!
//! The VM's root is the host's own file system, shared read-only over 9p with a tmpfs overlay on top (the test
//! suite's own cordon, bubblewrap, nft, python3 and kernel modules as they are installed), not an image of
//! copied binaries: the jail needs many programs and their libraries, and the modules it loads on demand
//! (veth, nf_tables and its expressions), which a copy would have to list and keep up to date. Under TCG
//! (emulation, no KVM) the VM boots in seconds and the whole test takes about 75 s on two cores.

use std::time::Duration;

use serde_json::Value;

use crate::rigs::qemu::{available, boot_sharing_host, said};

/// Mounts the host's root over 9p under a tmpfs overlay, with /proc, /sys, /dev, tmpfs /tmp and /run and the
/// unified cgroup hierarchy alone at /sys/fs/cgroup; the kernel's module requests go to the host's modprobe
/// there; then runs /in.sh in it.
const ROOT: &str = r#"mkdir -p /host /up /newroot
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose hostroot /host || echo @@9p-failed
mount -t tmpfs up /up && mkdir -p /up/u /up/w
mount -t overlay root -o lowerdir=/host,upperdir=/up/u,workdir=/up/w /newroot || echo @@overlay-failed
printf '#!/bin/sh\nexec chroot /newroot /sbin/modprobe "$@"\n' > /modprobe && chmod 755 /modprobe
echo /modprobe > /proc/sys/kernel/modprobe
mount -t proc proc /newroot/proc && mount -t sysfs sys /newroot/sys && mount -t devtmpfs dev /newroot/dev
mount -t tmpfs tmp /newroot/tmp && mount -t tmpfs run /newroot/run
mount -t cgroup2 cgroup2 /newroot/sys/fs/cgroup
cp /in.sh /newroot/tmp/in.sh && chroot /newroot /bin/sh /tmp/in.sh
"#;

/// The limits, one jail each (the per-user cap: two of alice's at once, then her third and bob's), their exit
/// statuses as `@@name status`, cordon's standard error as `@@err` lines, the audit records as `@@audit` lines.
const LIMITS: &str = r#"export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
echo @@cgroup $(stat -fc %T /sys/fs/cgroup) $(awk '$3 == "cgroup"' /proc/mounts | wc -l)
C=/srv/cordon-vm; mkdir -p $C /tmp/w && cd /tmp/w
cat > $C/c.yaml <<Y
jail: { grace: 1s }
audit: { path: $C/audit.log }
ca: { dir: $C/cas }
limits: { per_user: { jails: 2 } }
sandboxes:
  - { id: a1, user: alice, policy: p, token_sha256: "@HASH@" }
  - { id: a2, user: alice, policy: p, token_sha256: "@HASH@" }
  - { id: a3, user: alice, policy: p, token_sha256: "@HASH@" }
  - { id: b1, user: bob, policy: p, token_sha256: "@HASH@" }
policies:
  p:
    allow: []
Y
j() { id=$1; shift; @BIN@ jail --sandbox $id --config $C/c.yaml --user 65534:65534 "$@" 2>$C/err.$id; r=$?; sed 's/^/@@err /' $C/err.$id; return $r; }
j a1 --pids 16 --wall 30s -- python3 -c 'import os, time
refused = 0
for _ in range(60):
    try:
        pid = os.fork()
    except OSError:
        refused += 1
        continue
    if pid == 0:
        time.sleep(2)
        os._exit(0)
print("@@refused", refused, flush=True)'; echo @@pids $?
j a1 --memory 32MiB -- python3 -c 'b = bytearray(128 * 1024 * 1024); print("@@survived yes")'; echo @@memory $?
j a1 --cpu 0.2 -- python3 -c 'import time
c, t = time.process_time(), time.monotonic()
while time.monotonic() - t < 2: pass
print("@@busy", round(time.process_time() - c, 2), flush=True)'; echo @@cpu $?
j a1 --disk 4MiB -- sh -c 'dd if=/dev/zero of=/tmp/big bs=1M count=16 2>&1; echo @@dd $?; echo @@written $(du -m /tmp/big | cut -f1); sleep 2'; echo @@disk $?
j a1 --wall 2s -- sleep 1d; echo @@wall $?
mkfifo /tmp/fifo; sleep 3600 > /tmp/fifo & held=$!
j a1 --idle 2s -- sh -c 'read line; echo got $line' < /tmp/fifo; echo @@idle $?; kill $held
j a1 -- sleep 10 & j a2 -- sleep 10 &
n=0; while [ $(ls /run/netns 2>/dev/null | wc -l) -lt 2 ] && [ $n -lt 200 ]; do sleep 0.1; n=$((n+1)); done
j a3 -- true; echo @@third $?
j b1 -- true; echo @@bob $?
wait
j a3 -- true; echo @@after $?
sed 's/^/@@audit /' $C/audit.log
"#;

/// The VM's jail records (`kind: jail`).
fn records(console: &str) -> Vec<Value> {
    console
        .lines()
        .filter_map(|l| l.split_once("@@audit ").map(|(_, r)| r))
        .filter_map(|r| serde_json::from_str::<Value>(r.trim()).ok())
        .filter(|r| r["kind"] == "jail")
        .collect()
}

/// The exit status `@@name` said.
fn status(console: &str, name: &str) -> i64 {
    said(console, name)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no @@{name} status: {console}"))
}

#[test]
fn the_jails_limits_hold_on_cgroup_v2_in_a_vm() {
    if !available("the_jails_limits_hold_on_cgroup_v2_in_a_vm") {
        return;
    }
    let script = LIMITS
        .replace("@BIN@", crate::rigs::process::BIN)
        .replace("@HASH@", &crate::rigs::client::hash("unused-token"));
    let modules = ["9p", "9pnet_virtio", "overlay"];
    let files = [("in.sh", script.as_bytes())];
    let all = boot_sharing_host(ROOT, &files, &modules, Duration::from_secs(300));
    // What the script said, without the audit records (whose `exec` records quote the commands' text).
    let console: String = all
        .lines()
        .filter(|l| !l.contains("@@audit "))
        .map(|l| format!("{l}\n"))
        .collect();
    let err: String = console
        .lines()
        .filter_map(|l| l.split_once("@@err ").map(|(_, e)| format!("{e}\n")))
        .collect();
    assert_eq!(said(&console, "cgroup"), Some("cgroup2fs 0"), "only v2: {console}");
    // pids: forks refused, the command ends well.
    assert_eq!(status(&console, "pids"), 0, "{console}");
    let refused: u32 = said(&console, "refused").unwrap().parse().unwrap();
    assert!(refused > 30, "{refused} forks refused: {console}");
    assert!(err.contains("pids 16 (cgroup v2 pids)"), "{err}");
    // memory: OOM-killed.
    assert_eq!(status(&console, "memory"), 137, "{console}");
    assert!(said(&console, "survived").is_none(), "{console}");
    assert!(err.contains("memory 32MiB (cgroup v2 memory, no swap)"), "{err}");
    // cpu: 2 s of busy loop get about 0.4 s of CPU under a quota of 0.2.
    assert_eq!(status(&console, "cpu"), 0, "{console}");
    assert!(err.contains("cpu 0.2 (cgroup v2 cpu quota)"), "{err}");
    let busy: f64 = said(&console, "busy").unwrap().parse().unwrap();
    eprintln!("CPU time of 2 s of busy loop under cpu 0.2: {busy} s");
    assert!(busy < 1.0, "{busy} s of CPU in 2 s under cpu 0.2: {console}");
    // disk: /tmp full at 4 MiB.
    assert_eq!(status(&console, "disk"), 0, "{console}");
    assert_eq!(said(&console, "dd"), Some("1"), "{console}");
    let written: u64 = said(&console, "written").unwrap().parse().unwrap();
    assert!(written <= 4, "{written} MiB in /tmp");
    // wall and idle, by cordon.
    assert_eq!(status(&console, "wall"), 124, "{console}");
    assert!(err.contains("wall limit (2s) reached"), "{err}");
    assert_eq!(status(&console, "idle"), 123, "{console}");
    assert!(err.contains("idle limit (2s) reached"), "{err}");
    // The per-user cap: alice's third refused while two run, bob's runs, hers once they ended.
    assert_eq!(status(&console, "third"), 125, "{console}");
    assert!(
        err.contains("user alice runs 2 jail(s) on this host already") && err.contains("limits.per_user.jails (2)"),
        "{err}"
    );
    assert_eq!(status(&console, "bob"), 0, "{console}");
    assert_eq!(status(&console, "after"), 0, "{console}");
    // The records: each limit's, held by cgroup v2 where the cgroup holds it.
    let records = records(&all);
    let limit = |name: &str| {
        records
            .iter()
            .find(|r| r["jail"]["event"] == "limit" && r["jail"]["limit"] == name)
            .unwrap_or_else(|| panic!("no {name} limit record in {records:#?}"))
    };
    for (name, value, mechanism) in [
        ("pids", "16", Some("cgroup v2")),
        ("memory", "32MiB", Some("cgroup v2")),
        ("disk", "4MiB", None),
        ("wall", "2s", Some("cordon")),
        ("idle", "2s", None),
    ] {
        let r = limit(name);
        assert_eq!(
            (r["jail"]["value"].as_str(), r["reason"].as_str()),
            (Some(value), Some("jail_limit")),
            "{r}"
        );
        if let Some(m) = mechanism {
            assert!(r["jail"]["mechanism"].as_str().unwrap().starts_with(m), "{r}");
        }
    }
    assert!(
        limit("memory")["jail"]["detail"]
            .as_str()
            .unwrap()
            .contains("OOM-killed")
    );
    let ends: Vec<i64> = records
        .iter()
        .filter(|r| r["jail"]["event"] == "end" && r["sandbox"] == "a1")
        .filter_map(|r| r["jail"]["status"].as_i64())
        .collect();
    assert!(ends.starts_with(&[0, 137, 0, 0, 124, 123]), "{ends:?}");
}
