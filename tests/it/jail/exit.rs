//! `cordon jail`'s exit code is the command's, and 125 when the jail itself failed: also when bubblewrap fails
//! after it started (here: it cannot enter a folder that does not exist in the jail's own /proc), whose own code
//! 1 would otherwise pass for the command's.

use crate::rigs::gateway::World;
use crate::rigs::netns::available;
use crate::rigs::wait::{Deadline, TimedChild, Within};

#[tokio::test(flavor = "multi_thread")]
async fn the_root_jail_exits_with_the_commands_code_and_125_when_bubblewrap_fails() {
    if !available("the_root_jail_exits_with_the_commands_code_and_125_when_bubblewrap_fails") {
        return;
    }
    let w = World::new().await;
    let id = format!("exit{}", w.net.n);
    let config = w.config(&id, "", None);
    let run = |cwd: &str, code: &str| {
        let mut c = w.net.enter(&w.net.gw, crate::rigs::process::BIN);
        c.args(["jail", "--sandbox", &id, "--config"])
            .arg(&config)
            .args(["--user", "65534:65534", "--", "sh", "-c", &format!("exit {code}")])
            .current_dir(cwd);
        c.output_within()
    };
    for code in ["0", "1", "3", "125"] {
        let out = run("/", code);
        assert_eq!(out.status.code(), Some(code.parse().unwrap()), "{out:?}");
    }
    // cordon's working folder is /proc/PID of a process the jail's PID namespace does not have.
    let out = run("/proc/self", "0");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(
        stderr.contains("bwrap:") && stderr.contains("the jail could not be set up"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_project_jail_exits_with_the_commands_code_and_125_when_bubblewrap_fails() {
    if !available("the_project_jail_exits_with_the_commands_code_and_125_when_bubblewrap_fails") {
        return;
    }
    let (uid, gid, _) = crate::rigs::jail::user();
    let crate::rigs::jail::UserDir { dir, bin, .. } = crate::rigs::jail::user_dir("jail-exit");
    let d = dir.path();
    let yaml = format!(
        "ca: {{ dir: {d}/cas }}\naudit: {{ path: {d}/audit.jsonl }}\nsandboxes:\n  - {{ id: t, user: dev, token_sha256: {h}, policy: p }}\npolicies:\n  p: {{ allow: [] }}\n",
        d = d.display(),
        h = crate::rigs::client::hash("unused"),
    );
    std::fs::write(d.join("cordon.yaml"), yaml).unwrap();
    crate::rigs::jail::chown_r(d, uid, gid);
    let run = |project: &std::path::Path, code: &str| {
        crate::rigs::jail::jail_as_user(&bin, &d.join("cordon.yaml"), project, &[], &format!("exit {code}"))
            .output_within()
    };
    for code in ["0", "1", "3", "125"] {
        let out = run(&d.join("project"), code);
        assert_eq!(out.status.code(), Some(code.parse().unwrap()), "{out:?}");
    }
    // A project bubblewrap cannot bind: /proc/PID of cordon, which the jail's own /proc does not have.
    let out = run(std::path::Path::new("/proc/self"), "0");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(stderr.contains("the jail could not be set up"), "{stderr}");
}

/// Start `jail` (a `cordon jail ... -- sh -c` of [`TRAPS`]), wait until the command is up, send cordon
/// `signal`, and return what the command printed and cordon's exit code; all within a minute.
fn signalled(mut jail: std::process::Command, signal: nix::sys::signal::Signal) -> (String, Option<i32>) {
    use std::io::{BufRead, Read};
    use std::os::unix::process::CommandExt;
    let what = format!("{jail:?}, sent {signal}");
    let mut child = jail
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let deadline = Deadline::start(&child, std::time::Duration::from_secs(60), &what);
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    if line.trim() != "ready" {
        let mut err = String::new();
        let _ = child.stderr.take().unwrap().read_to_string(&mut err);
        deadline.check(&err);
        panic!("{what}: the command never said ready: {line:?} {err}");
    }
    // `nsenter`, setpriv and the wrapper of [`ignoring`] exec in place: the child is cordon itself.
    crate::rigs::process::signal(child.id(), signal).unwrap();
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let code = child.timed_wait().unwrap().code();
    deadline.check(&format!("{rest}{err}"));
    (rest, code)
}

/// `jail` started the way a shell starts a background job or `nohup` does, and more: SIGINT, SIGQUIT and SIGHUP
/// ignored, SIGTERM, SIGUSR1 and SIGCHLD blocked (a disposition of ignore and the signal mask survive exec).
fn ignoring(jail: &std::process::Command) -> std::process::Command {
    const WRAP: &str = "import os, signal, sys
for s in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGUSR1, signal.SIGCHLD})
os.execvp(sys.argv[1], sys.argv[1:])";
    let mut c = std::process::Command::new("python3");
    c.args(["-c", WRAP]).arg(jail.get_program()).args(jail.get_args());
    c.env_clear()
        .env("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    for (k, v) in jail.get_envs() {
        if let Some(v) = v {
            c.env(k, v);
        }
    }
    if let Some(dir) = jail.get_current_dir() {
        c.current_dir(dir);
    }
    c
}

/// A command that says which signal reached it and exits with a code of its own.
const TRAPS: &str = "for s in TERM:7 INT:8 HUP:9 QUIT:10 USR1:11 USR2:12; do \
                     trap \"echo got=${s%:*}; exit ${s#*:}\" ${s%:*}; done; echo ready; while :; do sleep 0.1; done";

#[tokio::test(flavor = "multi_thread")]
async fn signals_to_either_jail_reach_the_command_whose_code_cordon_exits_with() {
    use nix::sys::signal::Signal;
    if !available("signals_to_either_jail_reach_the_command_whose_code_cordon_exits_with") {
        return;
    }
    let w = World::new().await;
    let id = format!("sig{}", w.net.n);
    let config = w.config(&id, "", None);
    let root = |script: &str| {
        let mut c = w.net.enter(&w.net.gw, crate::rigs::process::BIN);
        c.args(["jail", "--sandbox", &id, "--config"])
            .arg(&config)
            .args(["--user", "65534:65534", "--", "sh", "-c", script])
            .current_dir("/");
        c
    };
    let (uid, gid, _) = crate::rigs::jail::user();
    let crate::rigs::jail::UserDir { dir, bin, project } = crate::rigs::jail::user_dir("jail-signal");
    let d = dir.path();
    let yaml = format!(
        "ca: {{ dir: {d}/cas }}\naudit: {{ path: {d}/audit.jsonl }}\nsandboxes:\n  - {{ id: t, user: dev, token_sha256: {h}, policy: p }}\npolicies:\n  p: {{ allow: [] }}\n",
        d = d.display(),
        h = crate::rigs::client::hash("unused"),
    );
    std::fs::write(d.join("cordon.yaml"), yaml).unwrap();
    crate::rigs::jail::chown_r(d, uid, gid);
    let user = |script: &str| crate::rigs::jail::jail_as_user(&bin, &d.join("cordon.yaml"), &project, &[], script);
    for (name, make) in [
        ("root", &root as &dyn Fn(&str) -> std::process::Command),
        ("project", &user),
    ] {
        // Started ignoring and blocking signals, the command has none ignored and none blocked.
        let out = ignoring(&make("exec grep -E '^Sig(Ign|Blk)' /proc/self/status")).output_within();
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            said.split_whitespace().collect::<Vec<_>>(),
            ["SigBlk:", "0000000000000000", "SigIgn:", "0000000000000000"],
            "{name} jail: {said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let signals = [
            (Signal::SIGTERM, 7),
            (Signal::SIGINT, 8),
            (Signal::SIGHUP, 9),
            (Signal::SIGQUIT, 10),
            (Signal::SIGUSR1, 11),
            (Signal::SIGUSR2, 12),
        ];
        for (signal, code) in signals {
            let (said, exit) = signalled(make(TRAPS), signal);
            let what = signal.as_str().trim_start_matches("SIG");
            assert!(said.contains(&format!("got={what}")), "{name} jail, {signal}: {said:?}");
            assert_eq!(exit, Some(code), "{name} jail, {signal}: {said:?}");
        }
        // Started from a background job or under nohup: the command still gets, and can trap, each signal.
        for (signal, code) in signals {
            let (said, exit) = signalled(ignoring(&make(TRAPS)), signal);
            let what = signal.as_str().trim_start_matches("SIG");
            assert!(
                said.contains(&format!("got={what}")),
                "{name} jail started ignoring signals, {signal}: {said:?}"
            );
            assert_eq!(
                exit,
                Some(code),
                "{name} jail started ignoring signals, {signal}: {said:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_command_cannot_take_back_the_word_that_it_started() {
    if !available("the_command_cannot_take_back_the_word_that_it_started") {
        return;
    }
    let (uid, gid, _) = crate::rigs::jail::user();
    let crate::rigs::jail::UserDir { dir, bin, project } = crate::rigs::jail::user_dir("jail-started");
    let d = dir.path();
    let yaml = format!(
        "ca: {{ dir: {d}/cas }}\naudit: {{ path: {d}/audit.jsonl }}\nsandboxes:\n  - {{ id: t, user: dev, token_sha256: {h}, policy: p }}\npolicies:\n  p: {{ allow: [] }}\n",
        d = d.display(),
        h = crate::rigs::client::hash("unused"),
    );
    std::fs::write(d.join("cordon.yaml"), yaml).unwrap();
    crate::rigs::jail::chown_r(d, uid, gid);
    // Read it back, remove it, replace it, change its mode: each fails, and cordon exits with the command's code.
    let script = "w=/run/cordon-started
timeout 2 cat $w >/dev/null 2>&1 && echo read=took || echo read=refused
rm -f $w 2>/dev/null && echo rm=took || echo rm=refused
mv $w /run/x 2>/dev/null && echo mv=took || echo mv=refused
chmod 600 $w 2>/dev/null && echo chmod=took || echo chmod=refused
exit 3";
    let w = World::new().await;
    let id = format!("word{}", w.net.n);
    let config = w.config(&id, "", None);
    let mut root = w.net.enter(&w.net.gw, crate::rigs::process::BIN);
    root.args(["jail", "--sandbox", &id, "--config"])
        .arg(&config)
        .args(["--user", &format!("{uid}:{gid}"), "--", "sh", "-c", script])
        .current_dir("/");
    let user = crate::rigs::jail::jail_as_user(&bin, &d.join("cordon.yaml"), &project, &[], script);
    for (name, mut c) in [("root", root), ("project", user)] {
        let out = c.output_within();
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(3),
            "{name}: {said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for wanted in ["read=refused", "rm=refused", "mv=refused", "chmod=refused"] {
            assert!(said.contains(wanted), "{name}, {wanted}: {said}");
        }
    }
}
