//! `cordon jail`'s exit code is the command's, and 125 when the jail itself failed: also when bubblewrap fails
//! after it started (here: it cannot enter a folder that does not exist in the jail's own /proc), whose own code
//! 1 would otherwise pass for the command's.

use crate::rigs::gateway::World;
use crate::rigs::netns::available;

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
        c.output().unwrap()
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
            .output()
            .unwrap()
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
/// `signal`, and return what the command printed and cordon's exit code.
fn signalled(mut jail: std::process::Command, signal: nix::sys::signal::Signal) -> (String, Option<i32>) {
    use std::io::BufRead;
    let mut child = jail
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready", "{:?}", child.wait_with_output());
    // `ip netns exec` and setpriv exec in place: the child is cordon itself.
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, signal).unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    (rest, child.wait().unwrap().code())
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
    let root = || {
        let mut c = w.net.enter(&w.net.gw, crate::rigs::process::BIN);
        c.args(["jail", "--sandbox", &id, "--config"])
            .arg(&config)
            .args(["--user", "65534:65534", "--", "sh", "-c", TRAPS])
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
    let user = || crate::rigs::jail::jail_as_user(&bin, &d.join("cordon.yaml"), &project, &[], TRAPS);
    for (name, make) in [
        ("root", &root as &dyn Fn() -> std::process::Command),
        ("project", &user),
    ] {
        let signals = [
            (Signal::SIGTERM, 7),
            (Signal::SIGINT, 8),
            (Signal::SIGHUP, 9),
            (Signal::SIGQUIT, 10),
            (Signal::SIGUSR1, 11),
            (Signal::SIGUSR2, 12),
        ];
        for (signal, code) in signals {
            let (said, exit) = signalled(make(), signal);
            let what = signal.as_str().trim_start_matches("SIG");
            assert!(said.contains(&format!("got={what}")), "{name} jail, {signal}: {said:?}");
            assert_eq!(exit, Some(code), "{name} jail, {signal}: {said:?}");
        }
    }
}
