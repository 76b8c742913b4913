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

#[test]
fn every_call_that_makes_a_name_is_notified_mknod_among_them() {
    let program = program().unwrap();
    let mut calls = vec![
        libc::SYS_mknodat,
        libc::SYS_openat2,
        libc::SYS_execveat,
        libc::SYS_renameat2,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([libc::SYS_mknod, libc::SYS_creat, libc::SYS_symlink]);
    for nr in calls {
        let nr = u32::try_from(nr).unwrap();
        assert!(
            program.iter().any(|i| i.code & 0x07 == 0x05 && i.k == nr),
            "system call {nr} is compared in the filter"
        );
    }
}
