//! What git on the host runs after a jail (or while it runs) that the command could have planted, tried through
//! the binary in both jails: every file git reads for configuration and hooks or that sends it elsewhere
//! (`config`, `config.worktree`, `commondir`, `hooks/`, `info/`, `objects/info/alternates`, a linked
//! worktree's `commondir`, a submodule's git directory and its checkout's `.git` file, the folders holding them,
//! `.git` itself), and `.git` where the project had none. The developer's real git then runs `status`, a commit
//! (hooks), an alias, the linked worktree and the submodule: the payload (a marker file) must not run. The same
//! attack with `--writable-git` does run it, which shows the test would see it.

use std::path::Path;
use std::process::Command;

use crate::rigs::jail::{USER, UserDir, chown_r, user, user_dir};
use crate::rigs::wait::Within;

/// The attack, run inside from the project: each line says whether it took. `$1` is the marker's path.
const ATTACK: &str = r##"m=$1
evil="[core]
	fsmonitor = \"touch $m; false\"
[alias]
	st = !touch $m"
cp -r .git/. evil 2>/dev/null; printf '%s\n' "$evil" >> evil/config
try() { n=$1; shift; if sh -c "$@" 2>/dev/null; then echo "$n=took"; else echo "$n=refused"; fi; }
try commondir 'echo ../evil > .git/commondir'
try config 'printf "%s\n" "$0" >> .git/config' "$evil"
try config.worktree 'printf "%s\n" "$0" > .git/config.worktree' "$evil"
try hook 'printf "#!/bin/sh\ntouch $0\n" > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit' "$m"
try info 'echo "* filter=evil" > .git/info/attributes'
try alternates 'echo "$PWD/evil/objects" > .git/objects/info/alternates'
try worktree-commondir 'echo "$PWD/evil" > .git/worktrees/wt/commondir'
[ "$2" = plant ] && exit 0
try worktrees-moved 'mv .git/worktrees .git/worktrees-away'
try module-config 'printf "%s\n" "$0" >> .git/modules/lib/config' "$evil"
try modules-moved 'mv .git/modules .git/modules-away'
try submodule-gitfile 'echo "gitdir: ../evil" > lib/.git'
try submodule-moved 'mv lib lib-away'
try gitdir-moved 'mv .git .git-away'
try nested 'git init -q nested && printf "%s\n" "$0" >> nested/.git/config' "$evil"
"##;

/// The user's own git, as a developer runs it after the jail, in `dir`; its output.
fn host_git(dir: &Path, args: &[&str]) -> String {
    let (uid, gid, home) = user();
    let out = Command::new("setpriv")
        .args([
            "--reuid",
            &uid.to_string(),
            "--regid",
            &gid.to_string(),
            "--init-groups",
            "--",
        ])
        .arg("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .envs([
            ("GIT_AUTHOR_NAME", "dev"),
            ("GIT_AUTHOR_EMAIL", "dev@example.com"),
            ("GIT_COMMITTER_NAME", "dev"),
            ("GIT_COMMITTER_EMAIL", "dev@example.com"),
        ])
        .output_within();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A project of the test user's in `d`: a repository with a commit, a submodule (`lib`) and a linked worktree
/// outside the project (`d/wt`).
fn repository(d: &Path, project: &Path) {
    let (uid, gid, _) = user();
    let lib = d.join("lib-src");
    std::fs::create_dir_all(&lib).unwrap();
    chown_r(d, uid, gid);
    for (dir, args) in [
        (lib.as_path(), &["init", "-q"][..]),
        (&lib, &["commit", "-q", "--allow-empty", "-m", "lib"]),
        (project, &["init", "-q"]),
        (project, &["commit", "-q", "--allow-empty", "-m", "first"]),
    ] {
        host_git(dir, args);
    }
    let lib = lib.display().to_string();
    host_git(
        project,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            &lib,
            "lib",
        ],
    );
    host_git(project, &["commit", "-q", "-m", "lib"]);
    let wt = d.join("wt").display().to_string();
    host_git(project, &["worktree", "add", "-q", &wt]);
    assert!(project.join(".git/modules/lib/config").exists() && project.join("lib/.git").is_file());
    assert!(project.join(".git/worktrees/wt/commondir").exists());
}

/// After the attack, what git on the host runs: status (fsmonitor, also in the submodule), a commit (hooks), an
/// alias, the linked worktree; true when the marker appeared.
fn host_runs_the_payload(d: &Path, project: &Path, marker: &Path) -> bool {
    let _ = std::fs::remove_file(marker);
    let mut said = String::new();
    for args in [
        &["status"][..],
        &["commit", "-q", "--allow-empty", "-m", "after"],
        &["st"],
        &["submodule", "status"],
    ] {
        said.push_str(&host_git(project, args));
    }
    said.push_str(&host_git(&d.join("wt"), &["status"]));
    said.push_str(&host_git(&project.join("nested"), &["status"]));
    eprintln!("the host's git said: {said}");
    marker.exists()
}

fn config(d: &Path) -> std::path::PathBuf {
    let yaml = format!(
        "ca: {{ dir: {d}/cas }}\naudit: {{ path: {d}/audit.jsonl }}\nsandboxes:\n  - {{ id: t, user: dev, token_sha256: {h}, policy: p }}\npolicies:\n  p: {{ allow: [] }}\n",
        d = d.display(),
        h = crate::rigs::client::hash("unused"),
    );
    let path = d.join("cordon.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

const REFUSED: [&str; 13] = [
    "commondir=refused",
    "config=refused",
    "config.worktree=refused",
    "hook=refused",
    "info=refused",
    "alternates=refused",
    "worktree-commondir=refused",
    "worktrees-moved=refused",
    "module-config=refused",
    "modules-moved=refused",
    "submodule-gitfile=refused",
    "submodule-moved=refused",
    "gitdir-moved=refused",
];

#[tokio::test(flavor = "multi_thread")]
async fn nothing_the_project_jail_plants_is_run_by_git_on_the_host() {
    if !crate::rigs::netns::available("nothing_the_project_jail_plants_is_run_by_git_on_the_host") {
        return;
    }
    let (uid, gid, home) = user();
    let UserDir { dir, bin, project } = user_dir("jail-git");
    let d = dir.path();
    let config = config(d);
    repository(d, &project);
    let marker = d.join("PLANTED");
    let run = |extra: &[&str], what: &str| {
        chown_r(d, uid, gid);
        let mut c = crate::rigs::jail::jail_as_user(&bin, &config, &project, extra, ATTACK);
        c.args(["sh"])
            .arg(&marker)
            .arg(what)
            .env("HOME", &home)
            .current_dir(&project);
        c.output_within()
    };
    let out = run(&[], "all");
    let (said, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{said}{err}");
    for wanted in REFUSED.iter().chain(&["nested=took"]) {
        assert!(said.contains(wanted), "{wanted}:\n{said}{err}");
    }
    // The end-of-jail report names what was kept read-only, and the repository the command made.
    for wanted in [
        ".git/commondir",
        ".git/config.worktree",
        ".git/modules/lib/config",
        "lib/.git",
    ] {
        assert!(err.contains(wanted), "{wanted}: {err}");
    }
    assert!(
        err.contains(&project.join("nested/.git/config").display().to_string()),
        "{err}"
    );
    // What cordon made for the jail is gone, what the project had is as it was.
    assert!(!project.join(".git/commondir").exists() && !project.join(".git/config.worktree").exists());
    // The repository the command made is its own (git run in it obeys it): gone, the project's are tried.
    let _ = std::fs::remove_dir_all(project.join("nested"));
    assert!(
        !host_runs_the_payload(d, &project, &marker),
        "git on the host ran what the jail planted"
    );
    // With --writable-git the same attack takes, and git on the host runs it: the test sees a payload.
    // (Planted only: moved away, `.git` would leave the host's git no repository to run anything in.)
    let out = run(&["--writable-git"], "plant");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("commondir=took") && said.contains("hook=took"), "{said}");
    let _ = std::fs::remove_dir_all(project.join("nested"));
    assert!(
        host_runs_the_payload(d, &project, &marker),
        "the control attack did not run"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn nothing_the_root_jail_plants_is_run_by_git_on_the_host() {
    if !crate::rigs::netns::available("nothing_the_root_jail_plants_is_run_by_git_on_the_host") {
        return;
    }
    let (uid, gid, _) = user();
    let w = crate::rigs::gateway::World::new().await;
    let id = format!("git{}", w.net.n);
    let cfg = w.config(&id, "", None);
    let UserDir { dir, project, .. } = user_dir("jail-git-root");
    let d = dir.path();
    repository(d, &project);
    let marker = d.join("PLANTED");
    chown_r(d, uid, gid);
    let mut c = w.net.enter(&w.net.gw, crate::rigs::process::BIN);
    c.args(["jail", "--sandbox", &id, "--config"])
        .arg(&cfg)
        .args(["--", "sh", "-c", ATTACK, "sh"])
        .arg(&marker)
        .env("SUDO_UID", uid.to_string())
        .env("SUDO_GID", gid.to_string())
        .env("SUDO_USER", USER)
        .current_dir(&project);
    let out = c.output_within();
    let (said, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{said}{err}");
    for wanted in REFUSED.iter().chain(&["nested=took"]) {
        assert!(said.contains(wanted), "{wanted}:\n{said}{err}");
    }
    assert!(err.contains("read-only in the jail, for git on this host: "), "{err}");
    let _ = std::fs::remove_dir_all(project.join("nested"));
    assert!(
        !host_runs_the_payload(d, &project, &marker),
        "git on the host ran what the jail planted"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_project_without_git_cannot_get_a_repository_for_the_host() {
    if !crate::rigs::netns::available("a_project_without_git_cannot_get_a_repository_for_the_host") {
        return;
    }
    let (uid, gid, home) = user();
    let UserDir { dir, bin, project } = user_dir("jail-nogit");
    let d = dir.path();
    let config = config(d);
    let marker = d.join("PLANTED");
    chown_r(d, uid, gid);
    let script = format!(
        "git init -q . 2>/dev/null && echo init=took || echo init=refused
mkdir -p evil && git init -q evil && printf '[core]\\n\\tfsmonitor = \"touch {m}; false\"\\n' >> evil/.git/config
echo 'gitdir: evil/.git' > .git 2>/dev/null && echo gitfile=took || echo gitfile=refused
rmdir .git 2>/dev/null && echo removed=took || echo removed=refused
mkdir .git/hooks 2>/dev/null && echo inside=took || echo inside=refused",
        m = marker.display()
    );
    let out = crate::rigs::jail::jail_as_user(&bin, &config, &project, &[], &script)
        .env("HOME", &home)
        .current_dir(&project)
        .output_within();
    let (said, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{said}{err}");
    for wanted in ["init=refused", "gitfile=refused", "removed=refused", "inside=refused"] {
        assert!(said.contains(wanted), "{wanted}:\n{said}{err}");
    }
    // The empty `.git` is gone again; git on the host finds no repository in the project.
    assert!(!project.join(".git").exists());
    let said = host_git(&project, &["status"]);
    assert!(said.contains("not a git repository"), "{said}");
    assert!(!marker.exists());
}
