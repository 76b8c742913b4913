#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

#[test]
fn nothing_is_removed_while_a_file_system_is_mounted_in_the_run_folder() {
    if !nix::unistd::geteuid().is_root() {
        assert!(
            !std::env::var("CI").is_ok_and(|v| v == "true"),
            "this test mounts a tmpfs: it needs root, which CI has"
        );
        eprintln!("skipping: mounting a tmpfs needs root");
        return;
    }
    let run = tempfile::tempdir().unwrap();
    let home = run.path().join("private/home");
    std::fs::create_dir_all(&home).unwrap();
    nix::mount::mount(
        Some("cordon-test"),
        &home,
        Some("tmpfs"),
        nix::mount::MsFlags::empty(),
        Some("size=64k"),
    )
    .unwrap();
    std::fs::write(home.join("work"), "the user's").unwrap();
    std::fs::create_dir_all(run.path().join("gvisor/state")).unwrap();
    let refused = remove_made(run.path()).unwrap_err();
    assert!(refused.contains("still mounted"), "{refused}");
    assert_eq!(std::fs::read_to_string(home.join("work")).unwrap(), "the user's");
    assert!(run.path().join("gvisor/state").exists(), "nothing at all is removed");
    confine::unmount(&home);
    remove_made(run.path()).unwrap();
    assert!(!run.path().join("private").exists() && !run.path().join("gvisor").exists());
}
