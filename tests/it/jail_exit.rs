//! `cordon jail`'s exit code is the command's, and 125 when the jail itself failed: also when bubblewrap fails
//! after it started (here: it cannot enter a folder that does not exist in the jail's own /proc), whose own code
//! 1 would otherwise pass for the command's.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

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
    let (uid, gid, home) = crate::jail_user::user();
    let dir = tempfile::Builder::new().prefix("jail-exit").tempdir_in("/tmp").unwrap();
    let d = dir.path();
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = d.join("cordon");
    std::fs::copy(env!("CARGO_BIN_EXE_cordon"), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir(d.join("project")).unwrap();
    let yaml = format!(
        "ca: {{ dir: {d}/cas }}\naudit: {{ path: {d}/audit.jsonl }}\nsandboxes:\n  - {{ id: t, user: dev, token_sha256: {h}, policy: p }}\npolicies:\n  p: {{ allow: [] }}\n",
        d = d.display(),
        h = crate::rig::hash("unused"),
    );
    std::fs::write(d.join("cordon.yaml"), yaml).unwrap();
    crate::jail_user::chown_r(d, uid, gid);
    let run = |project: &std::path::Path, code: &str| {
        Command::new("setpriv")
            .args([
                "--reuid",
                &uid.to_string(),
                "--regid",
                &gid.to_string(),
                "--init-groups",
                "--",
            ])
            .arg(&bin)
            .args(["jail", "--config"])
            .arg(d.join("cordon.yaml"))
            .arg("--project")
            .arg(project)
            .args(["--", "sh", "-c", &format!("exit {code}")])
            .env_clear()
            .env("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
            .env("HOME", &home)
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
