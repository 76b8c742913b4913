//! cordon's files by what they are, not by name, through the binary: a hard link of the CA key or the vault in
//! the project, or of the audit log in the root jail's working folder (namespace or gVisor), makes the jail
//! refuse to start naming both paths (a path is hidden, an inode under another name would not be); so does a
//! standard stream that is one of cordon's files (`>> audit.jsonl` would hand the command the audit log to write
//! into, `< vault` the vault).

use std::path::Path;
use std::process::Stdio;

use crate::rigs::jail::{UserDir, chown_r, jail_as_user, user, user_dir};
use crate::rigs::wait::Within;

fn refused(out: &std::process::Output, names: &[&Path], what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{what}: {err}");
    for name in names {
        assert!(
            err.contains(&name.display().to_string()),
            "{what}: {} in {err}",
            name.display()
        );
    }
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("ran"),
        "{what}: the command ran"
    );
}

#[test]
fn hard_links_of_cordons_files_and_streams_that_are_them_are_refused_in_the_project_jail() {
    if !crate::rigs::netns::available(
        "hard_links_of_cordons_files_and_streams_that_are_them_are_refused_in_the_project_jail",
    ) {
        return;
    }
    let (uid, gid, home) = user();
    let UserDir { dir, bin, project } = user_dir("jail-links");
    let d = dir.path();
    let state = d.join("state");
    std::fs::create_dir(&state).unwrap();
    let yaml = format!(
        "ca: {{ dir: {s}/cas }}\naudit: {{ path: {s}/audit.jsonl }}\nvault: {{ file: {{ path: {s}/vault.bin }} }}\n\
         sandboxes:\n  - {{ id: t, user: dev, token_sha256: {h}, policy: p }}\npolicies:\n  p: {{ allow: [] }}\n",
        s = state.display(),
        h = crate::rigs::client::hash("unused"),
    );
    let config = d.join("cordon.yaml");
    std::fs::write(&config, yaml).unwrap();
    std::fs::write(state.join("vault.bin"), "sealed").unwrap();
    chown_r(d, uid, gid);
    let run = || {
        jail_as_user(&bin, &config, &project, &[], "echo ran")
            .env("HOME", &home)
            .output_within()
    };
    // A first run makes the sandbox's CA; its key is then linked into the project under a harmless name.
    let out = run();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let key = walkdir::WalkDir::new(state.join("cas"))
        .into_iter()
        .flatten()
        .find(|e| e.file_type().is_file() && e.file_name().to_string_lossy().contains("key"))
        .expect("the CA's key")
        .into_path();
    std::fs::create_dir_all(project.join("docs/notes")).unwrap();
    for (file, name) in [(&key, "docs/notes/readme.txt"), (&state.join("vault.bin"), "v")] {
        let link = project.join(name);
        std::fs::hard_link(file, &link).unwrap();
        chown_r(d, uid, gid);
        refused(&run(), &[&link, file], name);
        std::fs::remove_file(&link).unwrap();
    }
    // cordon's standard output appended to its audit log; its standard input the vault.
    let audit = std::fs::OpenOptions::new()
        .append(true)
        .open(state.join("audit.jsonl"))
        .unwrap();
    let out = jail_as_user(&bin, &config, &project, &[], "echo ran >&2")
        .env("HOME", &home)
        .stdout(audit)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = crate::rigs::wait::wait_within(out, "the jail with its stdout on the audit log");
    refused(&out, &[&state.join("audit.jsonl")], "stdout");
    assert!(String::from_utf8_lossy(&out.stderr).contains("standard output is"));
    let vault = std::fs::File::open(state.join("vault.bin")).unwrap();
    let out = jail_as_user(&bin, &config, &project, &[], "echo ran")
        .env("HOME", &home)
        .stdin(vault)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = crate::rigs::wait::wait_within(out, "the jail with its stdin on the vault");
    refused(&out, &[&state.join("vault.bin")], "stdin");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hard_link_of_the_audit_log_in_the_root_jails_working_folder_is_refused() {
    if crate::rigs::netns::available("a_hard_link_of_the_audit_log_in_the_root_jails_working_folder_is_refused") {
        audit_log_linked(&[]).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn under_gvisor_a_hard_link_of_the_audit_log_in_the_working_folder_is_refused() {
    if super::gvisor::runsc("a_hard_link_of_the_audit_log_in_the_working_folder_is_refused under gVisor") {
        audit_log_linked(&super::gvisor::GVISOR).await;
    }
}

/// The case in the jail `isolation` names (nothing: the namespace jail).
async fn audit_log_linked(isolation: &[&str]) {
    let w = crate::rigs::gateway::World::new().await;
    let id = format!("links{}", w.net.n);
    let config = w.config(&id, "", None);
    // Beside the audit log (a hard link stays on its file system).
    let work = w.path("work-links");
    std::fs::create_dir_all(&work).unwrap();
    let audit = w.path("audit.log");
    if !audit.exists() {
        std::fs::write(&audit, "").unwrap();
    }
    let link = work.join("build.log");
    std::fs::hard_link(&audit, &link).unwrap();
    let out = w
        .net
        .enter(&w.net.gw, crate::rigs::process::BIN)
        .args(["jail", "--sandbox", &id, "--config"])
        .arg(&config)
        .args(isolation)
        .args(["--user", "65534:65534", "--", "echo", "ran"])
        .current_dir(&work)
        .output_within();
    refused(&out, &[&link, &audit], "the audit log");
    std::fs::remove_file(&link).unwrap();
    // The command's standard output appended to the audit log itself.
    let appended = std::fs::OpenOptions::new().append(true).open(&audit).unwrap();
    let child = w
        .net
        .enter(&w.net.gw, crate::rigs::process::BIN)
        .args(["jail", "--sandbox", &id, "--config"])
        .arg(&config)
        .args(isolation)
        .args(["--user", "65534:65534", "--", "sh", "-c", "echo ran >&2"])
        .current_dir(&work)
        .stdout(appended)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = crate::rigs::wait::wait_within(child, "the jail with its stdout on the audit log");
    refused(&out, &[&audit], "stdout");
    assert!(String::from_utf8_lossy(&out.stderr).contains("standard output is"));
}
