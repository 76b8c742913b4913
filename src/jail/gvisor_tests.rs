#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

fn words(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

#[test]
fn bubblewraps_view_becomes_oci_mounts_in_order() {
    let root = tempfile::tempdir().unwrap();
    let args = words(&[
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--symlink",
        "usr/bin",
        "/bin",
        "--ro-bind",
        "/usr",
        "/usr",
        "--size",
        "1024",
        "--perms",
        "1777",
        "--tmpfs",
        "/tmp",
        "--symlink",
        "../run",
        "/var/run",
        "--perms",
        "0755",
        "--dir",
        "/home",
        "--bind",
        "/work/p",
        "/work/p",
        "--tmpfs",
        "/work/p/secrets",
    ]);
    let m = mounts(&args, root.path()).unwrap();
    let at: Vec<&str> = m.iter().map(|m| m["destination"].as_str().unwrap()).collect();
    assert_eq!(at, ["/dev", "/proc", "/usr", "/tmp", "/work/p", "/work/p/secrets"]);
    assert_eq!(m[2]["options"], json!(["rbind", "ro"]));
    assert_eq!(m[3]["options"], json!(["mode=1777", "size=1024"]));
    assert_eq!(m[4]["options"], json!(["rbind", "rw"]));
    // A hidden folder is an empty tmpfs (mode 0755: `--perms` of `--dir` does not carry over).
    assert_eq!(m[5]["options"], json!(["mode=0755"]));
    // The top-level link is made in the root; the one inside a private folder cannot be, and is left out.
    assert_eq!(
        std::fs::read_link(root.path().join("bin")).unwrap(),
        Path::new("usr/bin")
    );
    assert!(!root.path().join("var").exists());
}

#[test]
fn an_argument_it_does_not_know_is_refused_not_dropped() {
    let root = tempfile::tempdir().unwrap();
    let e = mounts(&words(&["--overlay-src", "/x"]), root.path()).unwrap_err();
    assert!(e.contains("--overlay-src"), "{e}");
    let e = mounts(&words(&["--bind", "/x"]), root.path()).unwrap_err();
    assert!(e.contains("without its argument"), "{e}");
}

#[test]
fn a_given_gid_means_no_other_groups_and_root_is_root() {
    assert_eq!(ids(&Who::Root), (0, 0, Vec::new()));
    assert_eq!(
        ids(&Who::User {
            uid: 1234,
            gid: Some(99)
        }),
        (1234, 99, Vec::new())
    );
}

#[test]
fn runsc_runs_in_the_jails_namespace_with_the_hosts_network_there() {
    let line = runsc_line("cordon-jail-x", Path::new("/run/cordon/jail/x/gvisor/state"));
    assert_eq!(
        line,
        words(&[
            "ip",
            "netns",
            "exec",
            "cordon-jail-x",
            "runsc",
            "--root",
            "/run/cordon/jail/x/gvisor/state",
            "--ignore-cgroups",
            "--network=host",
            "--host-uds=none",
            "--host-fifo=none",
        ])
    );
}
