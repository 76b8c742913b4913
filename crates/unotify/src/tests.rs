#![expect(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use super::*;

/// A filter that makes `getppid` wait for the supervisor and allows everything else.
fn getppid_waits() -> Vec<Instruction> {
    let nr = u32::try_from(libc::SYS_getppid).unwrap();
    vec![
        // Load the system call's number (offset 0 of `seccomp_data`).
        Instruction {
            code: 0x20,
            jt: 0,
            jf: 0,
            k: 0,
        },
        Instruction {
            code: 0x15,
            jt: 0,
            jf: 1,
            k: nr,
        },
        Instruction {
            code: 0x06,
            jt: 0,
            jf: 0,
            k: RET_USER_NOTIF,
        },
        Instruction {
            code: 0x06,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ALLOW,
        },
    ]
}

#[test]
fn a_matched_call_waits_for_the_supervisor_and_then_goes_on() {
    let (tx, rx) = std::sync::mpsc::channel();
    // The filter is the thread's own: the test's other threads are not under it.
    let caller = std::thread::spawn(move || {
        let listener = install(&getppid_waits()).expect("seccomp user notification (Linux 5.5+)");
        // SAFETY: gettid takes no argument.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) };
        tx.send((Listener::from_fd(listener.into_fd()).unwrap(), tid)).unwrap();
        // SAFETY: getppid takes no argument.
        unsafe { libc::getppid() }
    });
    let (listener, tid) = rx.recv().unwrap();
    let n = listener.recv().unwrap();
    assert_eq!(i64::from(n.nr), libc::SYS_getppid);
    assert_eq!(i64::from(n.pid), tid);
    assert!(listener.is_valid(n.id));
    listener.allow(n.id).unwrap();
    assert!(!listener.is_valid(n.id), "answered once");
    // SAFETY: getppid takes no argument.
    let expected = unsafe { libc::getppid() };
    assert_eq!(
        caller.join().unwrap(),
        expected,
        "the call went on as if nothing had stopped it"
    );
}
