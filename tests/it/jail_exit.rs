//! `cordon jail`'s exit code is the command's, and 125 when the jail itself failed: also when bubblewrap fails
//! after it started (here: it cannot enter a folder that does not exist in the jail's own /proc), whose own code
//! 1 would otherwise pass for the command's.


use crate::gateway::World;
use crate::netns::available;

#[tokio::test(flavor = "multi_thread")]
async fn the_root_jail_exits_with_the_commands_code_and_125_when_bubblewrap_fails() {
    if !available("the_root_jail_exits_with_the_commands_code_and_125_when_bubblewrap_fails") {
        return;
    }
    let w = World::new().await;
    let id = format!("exit{}", w.net.n);
    let config = w.config(&id, "", None);
    let run = |cwd: &str, code: &str| {
        let mut c = w.net.enter(&w.net.gw, crate::cli::BIN);
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
    let (uid, gid, _) = crate::jail_user::user();
    let crate::jail_user::UserDir { dir, bin, .. } = crate::jail_user::user_dir("jail-exit");
    let d = dir.path();
    let yaml = format!(
        "ca: {{ dir: {d}/cas }}\naudit: {{ path: {d}/audit.jsonl }}\nsandboxes:\n  - {{ id: t, user: dev, token_sha256: {h}, policy: p }}\npolicies:\n  p: {{ allow: [] }}\n",
        d = d.display(),
        h = crate::rig::hash("unused"),
    );
    std::fs::write(d.join("cordon.yaml"), yaml).unwrap();
    crate::jail_user::chown_r(d, uid, gid);
    let run = |project: &std::path::Path, code: &str| {
        crate::jail_user::jail_as_user(&bin, &d.join("cordon.yaml"), project, &[], &format!("exit {code}"))
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
