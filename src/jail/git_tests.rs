#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

fn git(dir: &Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(ok.status.success(), "git {args:?}: {ok:?}");
}

#[test]
fn every_git_directory_has_its_config_hooks_and_redirects_bound_read_only_and_what_was_made_goes() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().canonicalize().unwrap();
    git(&p, &["init", "-q"]);
    git(&p, &["config", "core.hooksPath", "tools/hooks"]);
    git(&p, &["config", "include.path", "../team.gitconfig"]);
    // A submodule's git directory and a linked worktree's, as git lays them out.
    let module = p.join(".git/modules/lib/inner");
    std::fs::create_dir_all(module.join("objects/info")).unwrap();
    std::fs::write(module.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(module.join("config"), "[core]\n").unwrap();
    let worktree = p.join(".git/worktrees/feature");
    std::fs::create_dir_all(&worktree).unwrap();
    std::fs::write(worktree.join("commondir"), "../..\n").unwrap();
    std::fs::write(worktree.join("gitdir"), "/elsewhere/.git\n").unwrap();
    // A submodule checkout's `.git` file and a nested repository.
    std::fs::create_dir_all(p.join("vendor/lib")).unwrap();
    std::fs::write(p.join("vendor/lib/.git"), "gitdir: ../../.git/modules/lib/inner\n").unwrap();
    std::fs::create_dir_all(p.join("nested")).unwrap();
    git(&p.join("nested"), &["init", "-q"]);
    let guard = GitGuard::set_up(&p).unwrap();
    let protected: Vec<String> = guard
        .protected()
        .iter()
        .map(|x| x.strip_prefix(&p).unwrap().display().to_string())
        .collect();
    for wanted in [
        ".git/config",
        ".git/config.worktree",
        ".git/commondir",
        ".git/hooks",
        ".git/info",
        ".git/objects/info/alternates",
        ".git/worktrees/feature/commondir",
        ".git/worktrees/feature/gitdir",
        ".git/worktrees/feature/config.worktree",
        ".git/modules/lib/inner/config",
        ".git/modules/lib/inner/commondir",
        ".git/modules/lib/inner/hooks",
        "tools/hooks",
        "team.gitconfig",
        "vendor/lib/.git",
        "nested/.git/config",
        "nested/.git/commondir",
    ] {
        assert!(protected.iter().any(|x| x == wanted), "{wanted}: {protected:?}");
    }
    // What was missing was made, harmless to git: commondir names the git directory itself.
    assert_eq!(std::fs::read_to_string(p.join(".git/commondir")).unwrap(), ".\n");
    assert!(p.join("tools/hooks").is_dir() && p.join("team.gitconfig").is_file());
    // Each folder on the way is bound onto itself before what it holds is bound read-only.
    let args = guard.args().join(" ");
    let at = |s: &str| {
        assert!(args.contains(s), "{s}: {args}");
        args.find(s).unwrap()
    };
    let d = p.display();
    assert!(
        at(&format!("--bind {d}/.git/modules {d}/.git/modules"))
            < at(&format!("--ro-bind {d}/.git/modules/lib/inner/config"))
    );
    assert!(
        at(&format!("--bind {d}/.git/worktrees {d}/.git/worktrees"))
            < at(&format!("--ro-bind {d}/.git/worktrees/feature/commondir"))
    );
    assert!(at(&format!("--bind {d}/vendor {d}/vendor")) < at(&format!("--ro-bind {d}/vendor/lib/.git")));
    // The report compares all of them.
    let watched = watched(&p);
    for wanted in [
        ".git/commondir",
        ".git/worktrees/feature/commondir",
        ".git/modules/lib/inner/config",
        "nested/.git/config",
    ] {
        assert!(watched.contains(&p.join(wanted)), "{wanted}: {watched:?}");
    }
    // Dropped: what cordon made is gone, what was there stays.
    drop(guard);
    for gone in [
        ".git/commondir",
        ".git/config.worktree",
        "tools",
        "team.gitconfig",
        ".git/modules/lib/inner/commondir",
    ] {
        assert!(!p.join(gone).exists(), "{gone} was left");
    }
    assert!(p.join(".git/config").is_file() && p.join(".git/worktrees/feature/commondir").is_file());
}

#[test]
fn a_folder_without_a_repository_gets_an_empty_read_only_one_and_links_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().canonicalize().unwrap();
    let guard = GitGuard::set_up(&p).unwrap();
    assert_eq!(guard.protected(), [p.join(".git")]);
    assert_eq!(std::fs::read_dir(p.join(".git")).unwrap().count(), 0);
    drop(guard);
    assert!(!p.join(".git").exists());
    // A link where git reads hooks is refused: a mount cannot hold it in place.
    git(&p, &["init", "-q"]);
    std::os::unix::fs::symlink("/tmp/elsewhere", p.join(".git/hooks-link")).unwrap();
    std::fs::remove_dir_all(p.join(".git/hooks")).unwrap();
    std::os::unix::fs::symlink("hooks-link", p.join(".git/hooks")).unwrap();
    let err = GitGuard::set_up(&p).unwrap_err();
    assert!(
        err.contains(".git/hooks is a symbolic link") && err.contains("--writable-git"),
        "{err}"
    );
}
