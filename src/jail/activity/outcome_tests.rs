#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

/// The status of a file of `uid`:`gid` with `mode`.
fn file(uid: u32, gid: u32, mode: u32) -> Stat {
    let f = tempfile::NamedTempFile::new().unwrap();
    let mut st = rustix::fs::fstat(f.as_file()).unwrap();
    st.st_uid = uid;
    st.st_gid = gid;
    st.st_mode = (st.st_mode & !0o7777) | mode;
    st
}

fn who(status: &str) -> CallerCreds {
    CallerCreds::of(status)
}

const NOBODY: &str =
    "Uid:\t65534\t65534\t65534\t65534\nGid:\t65534\t65534\t65534\t65534\nGroups:\t100 \nCapEff:\t0000000000000000\n";

#[test]
fn only_a_mode_that_allows_no_class_the_caller_may_be_in_is_a_certain_no() {
    let w = who(NOBODY);
    // The owner's bits decide for the owner.
    assert!(!w.may(&file(65534, 0, 0o577), W));
    assert!(w.may(&file(65534, 0, 0o200), W));
    // A member of the group: the group bits (an ACL's mask bounds every named entry).
    assert!(!w.may(&file(0, 100, 0o757), W));
    assert!(w.may(&file(0, 100, 0o020), W));
    // Neither: the group bits may be an ACL's mask that lets a named entry in, so only both refusing is a no.
    assert!(w.may(&file(0, 0, 0o020), W));
    assert!(w.may(&file(0, 0, 0o002), W));
    assert!(!w.may(&file(0, 0, 0o755), W));
    assert!(!w.may(&file(0, 0, 0o644), W | X));
}

#[test]
fn a_caller_with_dac_override_or_unread_credentials_is_not_judged_by_modes() {
    let root = who("Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\nCapEff:\t000001ffffffffff\n");
    assert!(root.may(&file(1, 1, 0o000), W));
    assert!(who("").may(&file(1, 1, 0o000), W));
}
