//! `cordon jail --isolation gvisor`: the escape suite's network and file cases against the gVisor jail, its exit
//! codes and signals, and `isolation:` in the configuration.

use cordon::jail::Plan;

use crate::rigs::gateway::World;
use crate::rigs::jail::{Scratch, host_leftovers, jail, leftovers};
use crate::rigs::netns::available;
use crate::rigs::process::BIN;
use crate::rigs::wait::{TimedChild, Within};

/// The flags of the gVisor jail.
pub(super) const GVISOR: [&str; 2] = ["--isolation", "gvisor"];

/// Whether runsc is here (in CI it must be: the test fails loudly without it).
pub(super) fn runsc(test: &str) -> bool {
    if !available(test) {
        return false;
    }
    let here = std::process::Command::new("runsc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !here && std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test}: runsc (gVisor) is not installed; CI installs the Debian package runsc (.ci/run)");
    }
    if !here {
        eprintln!("skipping {test}: runsc (gVisor) is not installed");
    }
    here
}

fn plan(id: &str) -> Plan {
    Plan::new(
        &cordon::names::SandboxId::parse(id).unwrap(),
        cordon::jail::plan::DEFAULT_SUBNET.parse().unwrap(),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_gvisor_jail_reaches_only_cordon_and_leaves_nothing() {
    if !runsc("the_gvisor_jail_reaches_only_cordon_and_leaves_nothing") {
        return;
    }
    let w = World::new().await;
    let id = format!("gvnet{}", w.net.n);
    let config = w.config(&id, "", None);
    super::root::reaches_only_cordon(&w, &config, &id, &GVISOR);
    super::root::err_has_rules(&w, &config, &id, &GVISOR, "under gVisor (runsc)");
    assert!(leftovers(&w, &plan(&id)).is_empty(), "{:?}", leftovers(&w, &plan(&id)));
}

#[tokio::test(flavor = "multi_thread")]
async fn under_gvisor_only_the_working_folder_is_writable_and_cordons_files_are_hidden() {
    if !runsc("under_gvisor_only_the_working_folder_is_writable_and_cordons_files_are_hidden") {
        return;
    }
    let w = World::new().await;
    let id = format!("gvfs{}", w.net.n);
    let config = w.config(&id, "", None);
    let work = Scratch::new("/var/lib", &id);
    std::os::unix::fs::chown(&work.0, Some(65534), Some(65534)).unwrap();
    // cordon's CA folder and audit log (in the test's folder) and the configuration: absent inside. The start word's
    // file, the one host file it may write, holds at most 4 KiB.
    let cas = w.dir.path().join("cas");
    let script = format!(
        "echo made > made.txt && cat made.txt; \
         for f in /etc/passwd-gv /usr/gv /opt/gv /tmp/../root/gv; do touch $f 2>/dev/null && echo WROTE $f; done; \
         echo x > /tmp/t && echo tmp-ok; ls -A {cas} 2>/dev/null | wc -l; cat {config} 2>/dev/null | wc -c; \
         ls -A /root 2>/dev/null | wc -l; \
         head -c 65536 /dev/zero >> /run/cordon-started 2>/dev/null && echo WROTE-64K-ON-THE-HOST; exit 3",
        cas = cas.display(),
        config = config.display()
    );
    let mut c = w.cordon_in_gateway();
    c.args(["jail", "--sandbox", &id, "--config"])
        .arg(&config)
        .args(GVISOR)
        .args(["--user", "65534:65534", "--", "sh", "-c", &script])
        .current_dir(&work.0);
    let out = c.output_within();
    let (text, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(3), "{text}{err}");
    assert_eq!(
        text.split_whitespace().collect::<Vec<_>>(),
        ["made", "tmp-ok", "0", "0", "0"],
        "{text}{err}"
    );
    assert_eq!(std::fs::read_to_string(work.0.join("made.txt")).unwrap(), "made\n");
    assert!(
        std::fs::read_dir(&cas).unwrap().next().is_some(),
        "the CA folder is empty on the host"
    );
    // What the activity log cannot record under gVisor is said at start.
    assert!(err.contains("without their paths"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn under_gvisor_the_activity_log_records_programs_and_files_from_gvisors_event_stream() {
    if !runsc("under_gvisor_the_activity_log_records_programs_and_files_from_gvisors_event_stream") {
        return;
    }
    let w = World::new().await;
    let id = format!("gvact{}", w.net.n);
    let config = w.config(&id, "", None);
    let audit = w.dir.path().join("audit.log");
    let work = Scratch::new("/var/lib", &id);
    std::os::unix::fs::chown(&work.0, Some(65534), Some(65534)).unwrap();
    let script = "echo a > made.txt && mv made.txt moved.txt && rm moved.txt && mkdir sub && \
                  python3 -c 'open(\"sub/py.txt\", \"w\").write(\"x\")' && python3 -c 'import os; os.truncate(\"sub/py.txt\", 0)' && \
                  mkfifo sub/fifo && echo done";
    let mut c = w.cordon_in_gateway();
    c.args(["jail", "--sandbox", &id, "--config"])
        .arg(&config)
        .args(GVISOR)
        .args(["--user", "65534:65534", "--", "sh", "-c", script])
        .current_dir(&work.0);
    let out = c.output_within();
    let (text, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{text}{err}");
    assert!(text.contains("done"), "{text}{err}");
    let records = crate::jail::activity_checks::activity(&audit);
    let ours: Vec<&serde_json::Value> = records.iter().filter(|r| r["sandbox"] == id.as_str()).collect();
    let w_ = work.0.display().to_string();
    // The programs: the command, and what it ran (by the path it was run by), with their arguments and folder.
    let exec = |name: &str| {
        ours.iter()
            .find(|r| r["kind"] == "exec" && r["exec"]["argv"][0] == name)
            .unwrap_or_else(|| panic!("no exec of {name} in {ours:#?}"))
    };
    assert_eq!(exec("sh")["exec"]["argv"][2], script);
    assert_eq!(
        exec("mv")["exec"]["argv"],
        serde_json::json!(["mv", "made.txt", "moved.txt"])
    );
    assert_eq!(exec("mv")["exec"]["cwd"], w_.as_str());
    // Each program's parent is the process that made it (gVisor's `sentry/clone`): the shell ran them.
    let sh = exec("sh")["exec"]["pid"].as_u64().unwrap();
    for child in ["mv", "rm", "python3"] {
        assert_eq!(exec(child)["exec"]["ppid"].as_u64(), Some(sh), "{child}: {ours:#?}");
    }
    assert_eq!(exec("python3")["exec"]["uid"], 65534);
    // The files: written and created with their paths; renamed, removed, made folders and FIFOs and truncated
    // by number only.
    let file = |op: &str, path: &str| {
        ours.iter()
            .find(|r| r["kind"] == "file" && r["file"]["op"] == op && r["file"]["path"] == path)
            .unwrap_or_else(|| panic!("no {op} of {path} in {ours:#?}"))
    };
    assert_eq!(file("create", &format!("{w_}/made.txt"))["reason"], "jail_file_written");
    file("create", &format!("{w_}/sub/py.txt"));
    for (op, call) in [
        ("rename", "rename"),
        ("remove", "unlinkat"),
        ("mkdir", "mkdir"),
        ("write", "truncate"),
        ("create", "mknod"),
    ] {
        let r = ours
            .iter()
            .find(|r| {
                r["kind"] == "file"
                    && r["file"]["op"] == op
                    && r["file"]["path"] == "?"
                    && r["file"]["syscall"].as_str().is_some_and(|s| s.starts_with(call))
            })
            .unwrap_or_else(|| panic!("no {op} in {ours:#?}"));
        assert_eq!(r["reason"], "jail_unreadable");
        assert!(r["file"]["pid"].as_u64().unwrap() > 1, "{r:#?}");
        assert!(r["file"]["syscall"].as_str().unwrap().starts_with(call), "{r:#?}");
    }
    // cordon's own start word is not the command's.
    assert!(
        ours.iter().all(|r| r["file"]["path"] != "/run/cordon-started"),
        "{ours:#?}"
    );
    assert!(ours.iter().all(|r| r["user"] == "alice"), "{ours:#?}");
    crate::rigs::audit::assert_schema(&audit);
}

#[tokio::test(flavor = "multi_thread")]
async fn under_gvisor_exit_codes_and_signals_pass_through() {
    if !runsc("under_gvisor_exit_codes_and_signals_pass_through") {
        return;
    }
    let w = World::new().await;
    let id = format!("gvsig{}", w.net.n);
    let config = w.config(&id, "", None);
    let (code, _, err) = jail(&w, &config, &id, &GVISOR, &["sh", "-c", "exit 128"]);
    assert_eq!(code, 128, "{err}");
    let (code, _, err) = jail(&w, &config, &id, &GVISOR, &["sh", "-c", "kill -KILL $$"]);
    assert_eq!(code, 137, "{err}");
    // A program that is not there: the jail's failure is told from the command's code.
    let (code, _, err) = jail(&w, &config, &id, &GVISOR, &["/nonexistent/program"]);
    assert_ne!(code, 0, "{err}");
    // SIGTERM to cordon reaches the command, which traps it and exits with its own code.
    let mut child = w
        .cordon_in_gateway()
        .args(["jail", "--sandbox", &id, "--config"])
        .arg(&config)
        .args(GVISOR)
        .args([
            "--user",
            "65534:65534",
            "--",
            "sh",
            "-c",
            "trap 'exit 42' TERM; echo up; while :; do sleep 0.1; done",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    std::io::BufRead::read_line(&mut out, &mut line).unwrap();
    assert_eq!(line.trim(), "up");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = child.timed_wait().unwrap();
    assert_eq!(status.code(), Some(42));
    assert!(leftovers(&w, &plan(&id)).is_empty(), "{:?}", leftovers(&w, &plan(&id)));
}

#[test]
fn isolation_is_read_from_jail_and_a_policys_jail_and_a_bad_one_is_refused_where_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.yaml");
    std::fs::write(
        &good,
        "sandboxes: [{ id: a, user: u, policy: p, token_sha256: '0000000000000000000000000000000000000000000000000000000000000000' }]\n\
         policies: { p: { allow: [], jail: { isolation: namespace } } }\njail: { isolation: gvisor }\n",
    )
    .unwrap();
    let out = std::process::Command::new(BIN)
        .args(["check", "--config"])
        .arg(&good)
        .output_within();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for (yaml, at) in [
        ("jail: { isolation: vm }\n", "jail.isolation"),
        (
            "policies: { p: { allow: [], jail: { isolation: vm } } }\n",
            "policies.p.jail.isolation",
        ),
    ] {
        let bad = dir.path().join("bad.yaml");
        std::fs::write(
            &bad,
            format!(
                "sandboxes: [{{ id: a, user: u, policy: p, token_sha256: '{}' }}]\n{}{yaml}",
                "0".repeat(64),
                if yaml.starts_with("policies") {
                    ""
                } else {
                    "policies: { p: { allow: [] } }\n"
                }
            ),
        )
        .unwrap();
        for cmd in [&["check", "--config"][..], &["run", "--config"][..]] {
            let out = std::process::Command::new(BIN).args(cmd).arg(&bad).output_within();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{cmd:?} took {yaml}");
            assert!(
                err.contains(at) && err.contains("namespace or gvisor"),
                "{cmd:?}: {err}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn under_gvisor_the_process_cap_and_the_private_folders_size_hold() {
    if !runsc("under_gvisor_the_process_cap_and_the_private_folders_size_hold") {
        return;
    }
    let w = World::new().await;
    let id = format!("gvlim{}", w.net.n);
    let config = w.config(&id, "", None);
    // pids: RLIMIT_NPROC in the bundle, which gVisor enforces: a fork flood past 20 fails.
    // (The host's pids cgroup, at the same limit, counts gVisor's own threads and processes: 20 would stop gVisor
    // itself from starting, so the limit here leaves it room; the flood is stopped either way.)
    let extra = [&GVISOR[..], &["--pids", "200"]].concat();
    let flood = "for i in $(seq 400); do sleep 5 & done; wait; echo all-started";
    let (code, out, err) = jail(&w, &config, &id, &extra, &["sh", "-c", flood]);
    assert!(code != 0 && !out.contains("all-started"), "{code} {out} {err}");
    // disk: the private /tmp's tmpfs is sized; a write past it fails.
    let extra = [&GVISOR[..], &["--disk", "1MiB"]].concat();
    let (code, _, err) = jail(
        &w,
        &config,
        &id,
        &extra,
        &["sh", "-c", "head -c 3000000 /dev/zero > /tmp/big"],
    );
    assert_ne!(code, 0, "3 MB went into a 1 MiB /tmp: {err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_jail_without_root_refuses_gvisor_and_says_why() {
    let w = World::new().await;
    let id = format!("gvproj{}", w.net.n);
    let config = w.config(&id, "", None);
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(BIN)
        .args(["jail", "--sandbox", &id, "--config"])
        .arg(&config)
        .arg("--project")
        .arg(dir.path())
        .args(GVISOR)
        .args(["--", "true"])
        .output_within();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(
        err.contains("needs root") && err.contains("--isolation namespace"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gvisor_jail_killed_outright_is_removed_whole_by_the_next_run_or_cleanup() {
    if !runsc("a_gvisor_jail_killed_outright_is_removed_whole_by_the_next_run_or_cleanup") {
        return;
    }
    let w = World::new().await;
    let id = format!("gvcrash{}", w.net.n);
    let config = w.config(&id, "", None);
    let plan = plan(&id);
    // cordon is killed (SIGKILL) once the command runs under gVisor: runsc and its sandbox outlive it.
    let crash = || {
        let log = tempfile::NamedTempFile::new().unwrap();
        let mut child = w
            .cordon_in_gateway()
            .args(["jail", "--sandbox", &id, "--config"])
            .arg(&config)
            .args(GVISOR)
            .args(["--user", "65534:65534", "--", "sleep", "60"])
            .stderr(log.reopen().unwrap())
            .spawn()
            .unwrap();
        // The start word, written by the first thing run under gVisor.
        let word = plan.run_dir().join("gvisor/word/started");
        crate::rigs::wait::until(
            "the command running under gVisor",
            std::time::Duration::from_secs(30),
            || std::fs::read_to_string(&word).is_ok_and(|w| w == "ok"),
        );
        child.kill().unwrap();
        child.timed_wait().unwrap();
        let left = host_leftovers(&plan, &id);
        assert!(
            left.iter().any(|l| l.starts_with("process")) && leftovers(&w, &plan).len() >= 3,
            "a killed jail left {left:?} and {:?}; its stderr: {}",
            leftovers(&w, &plan),
            std::fs::read_to_string(log.path()).unwrap_or_default()
        );
    };
    crash();
    let (code, out, err) = jail(&w, &config, &id, &GVISOR, &["echo", "ran"]);
    assert_eq!((code, out.trim()), (0, "ran"), "{err}");
    assert!(err.contains("removing what an earlier jail left"), "{err}");
    assert!(leftovers(&w, &plan).is_empty(), "{:?}", leftovers(&w, &plan));
    assert!(
        host_leftovers(&plan, &id).is_empty(),
        "{:?}",
        host_leftovers(&plan, &id)
    );
    // Or `--cleanup`, which needs no isolation named: it removes what either jail left.
    crash();
    let (code, out, err) = jail(&w, &config, &id, &["--cleanup"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("removed"), "{out}");
    assert!(leftovers(&w, &plan).is_empty(), "{:?}", leftovers(&w, &plan));
    crate::rigs::wait::until("gVisor's processes gone", std::time::Duration::from_secs(10), || {
        host_leftovers(&plan, &id).is_empty()
    });
}
