#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

#[test]
fn every_watched_change_is_found_by_path_and_hash() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::create_dir_all(p.join(".git/hooks")).unwrap();
    std::fs::write(p.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(p.join(".git/hooks/pre-commit.sample"), "#!/bin/sh\n").unwrap();
    std::fs::write(p.join("src.rs"), "fn main() {}\n").unwrap();
    let before = snapshot(p);
    assert_eq!(before.len(), 2, "{before:?}");
    std::fs::write(p.join(".git/config"), "[core]\n\tfsmonitor = ./x\n").unwrap();
    std::fs::create_dir_all(p.join(".vscode")).unwrap();
    std::fs::write(p.join(".vscode/tasks.json"), "{}").unwrap();
    std::os::unix::fs::symlink("/tmp/evil", p.join(".envrc")).unwrap();
    std::fs::remove_file(p.join(".git/hooks/pre-commit.sample")).unwrap();
    std::fs::write(p.join("src.rs"), "changed, but not watched").unwrap();
    let found = changes(&before, &snapshot(p));
    let paths: Vec<_> = found
        .iter()
        .map(|c| c.path.strip_prefix(p).unwrap().to_path_buf())
        .collect();
    assert_eq!(
        paths,
        [
            ".envrc",
            ".git/config",
            ".git/hooks/pre-commit.sample",
            ".vscode/tasks.json"
        ]
        .map(PathBuf::from)
    );
    let config = &found[1];
    assert_eq!(
        config.before.as_deref(),
        before.get(&p.join(".git/config")).map(String::as_str)
    );
    assert_ne!(config.before, config.after);
    assert!(found[0].before.is_none() && found[2].after.is_none() && found[3].before.is_none());
    assert_eq!(
        found[3].after.as_deref(),
        Some(hex::encode(Sha256::digest(b"{}")).as_str())
    );
}
