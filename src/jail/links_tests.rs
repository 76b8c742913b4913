#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

#[test]
fn a_hard_link_of_cordons_file_in_the_folder_is_refused_by_both_names() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("state/cas/sandbox")).unwrap();
    std::fs::create_dir_all(d.join("project/deep")).unwrap();
    std::fs::write(d.join("state/cas/sandbox/ca.key"), "key").unwrap();
    std::fs::write(d.join("state/vault.bin"), "sealed").unwrap();
    std::fs::write(d.join("project/mine"), "x").unwrap();
    // A file of cordon's folder (the CA's), and a file of cordon's, each linked under another name.
    let files = [d.join("state/cas"), d.join("state/vault.bin")];
    assert!(refuse_links(&files, Some(&d.join("project")), "--project").is_ok());
    std::fs::hard_link(d.join("state/cas/sandbox/ca.key"), d.join("project/deep/notes.txt")).unwrap();
    let err = refuse_links(&files, Some(&d.join("project")), "--project").unwrap_err();
    assert!(
        err.contains("project/deep/notes.txt") && err.contains("state/cas/sandbox/ca.key"),
        "{err}"
    );
    std::fs::remove_file(d.join("project/deep/notes.txt")).unwrap();
    std::fs::hard_link(d.join("state/vault.bin"), d.join("project/v")).unwrap();
    let err = refuse_links(&files, Some(&d.join("project")), "--project").unwrap_err();
    assert!(err.contains("project/v") && err.contains("vault.bin"), "{err}");
    // A hard link of a file that is not cordon's is the project's business.
    std::fs::remove_file(d.join("project/v")).unwrap();
    std::fs::hard_link(d.join("project/mine"), d.join("project/also-mine")).unwrap();
    assert!(refuse_links(&files, Some(&d.join("project")), "--project").is_ok());
}
