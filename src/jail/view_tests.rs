#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

#[test]
fn paths_are_resolved_against_the_working_folder_and_through_links() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().canonicalize().unwrap();
    std::fs::create_dir(real.join("state")).unwrap();
    std::os::unix::fs::symlink(real.join("state"), real.join("link")).unwrap();
    // A link in the existing part is resolved; the part that does not exist yet is kept as written.
    assert_eq!(resolve(&real.join("link/signing-key")), real.join("state/signing-key"));
    assert_eq!(resolve(&real.join("link/a/b")), real.join("state/a/b"));
    // Relative: against the working folder, as the kernel opens it for `cordon run`.
    let cwd = std::env::current_dir().unwrap().canonicalize().unwrap();
    assert_eq!(resolve(Path::new("state/x")), cwd.join("state/x"));
    assert!(resolve(Path::new("../x")).is_absolute());
}

#[test]
fn a_file_of_cordons_inside_the_writable_folder_is_refused_by_name() {
    let files = [PathBuf::from("/etc/cordon/key"), PathBuf::from("/p/state/audit.jsonl")];
    let err = refuse_inside(&files, Path::new("/p"), "--project").unwrap_err();
    assert!(
        err.contains("/p/state/audit.jsonl") && err.contains("--project"),
        "{err}"
    );
    assert!(refuse_inside(&files, Path::new("/q"), "--project").is_ok());
    // A folder of cordon's that holds the writable folder is refused too.
    let err = refuse_inside(&[PathBuf::from("/srv/certs")], Path::new("/srv/certs/p"), "x").unwrap_err();
    assert!(err.contains("/srv/certs"), "{err}");
}

#[test]
fn hiding_comes_after_every_bind_and_only_where_the_view_shows() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(project.join(".git/hooks")).unwrap();
    std::fs::write(project.join(".git/config"), "").unwrap();
    std::fs::write(project.join("secret"), "").unwrap();
    let guard = crate::jail::git::GitGuard::set_up(&project).unwrap();
    let view = View {
        tmpfs_size: None,
        writable: Some(project.clone()),
        home: Some(PathBuf::from("/home/someone")),
        private_home: Some(PrivateHome::Host(PathBuf::from("/run/x/home"))),
        git: guard.args(),
        hidden: vec![
            project.join("secret"),
            PathBuf::from("/etc/hostname"),
            PathBuf::from("/var/lib"),
        ],
        empty: PathBuf::from("/dev/null"),
    };
    let mut line = view.mounts();
    line.extend(view.hides());
    let text = line.join(" ");
    let p = project.display();
    for wanted in [
        "--ro-bind /usr /usr".to_string(),
        "--tmpfs /var".into(),
        "--bind /run/x/home /home/someone".into(),
        format!("--bind {p} {p}"),
        format!("--bind {p}/.git {p}/.git"),
        format!("--ro-bind {p}/.git/config {p}/.git/config"),
        format!("--ro-bind {p}/.git/hooks {p}/.git/hooks"),
        "--ro-bind /dev/null /etc/hostname".into(),
    ] {
        assert!(text.contains(&wanted), "{wanted}: {text}");
    }
    // Not in the view at all: nothing to hide.
    assert!(!text.contains("--tmpfs /var/lib"), "{text}");
    assert!(!line.iter().any(|a| a == "/"), "the host's root is bound: {text}");
    let at = |s: &str| line.iter().rposition(|a| *a == s).unwrap();
    let secret = project.join("secret").display().to_string();
    assert!(at(&secret) > at(&project.display().to_string()));
    assert!(view.shows(Path::new("/etc/passwd")) && view.shows(&project.join("x")));
    assert!(!view.shows(Path::new("/var/spool/postfix/public/pickup")) && !view.shows(Path::new("/home/someone/.ssh")));
    // With --writable-git, git's files are the project's like any other.
    let open = View {
        git: Vec::new(),
        ..view
    };
    assert!(!open.mounts().join(" ").contains(".git/config"));
}
