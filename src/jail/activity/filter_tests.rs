#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

#[test]
fn every_marked_return_notifies_and_nothing_else_changes() {
    let program = program().unwrap();
    let notify = program
        .iter()
        .filter(|i| i.code == RET && i.k == cordon_unotify::RET_USER_NOTIF)
        .count();
    assert!(notify > 0);
    assert!(
        !program
            .iter()
            .any(|i| i.code == RET && (i.k & 0xffff_0000) == libc::SECCOMP_RET_TRACE),
        "no trace action is left"
    );
    assert!(program.iter().any(|i| i.code == RET && i.k == libc::SECCOMP_RET_ALLOW));
}
