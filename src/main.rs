//! The `cordon` binary: the command line lives in the library ([`cordon::cli`]).

use std::process::ExitCode;

/// mimalloc rather than glibc's malloc: hyper takes a fresh 8 KiB read buffer for most messages (the last one is
/// still shared with the parsed head), and glibc serves those from its slow bins, consolidating as it goes.
/// HTTP forward: 13% less CPU per request; intercept 7%; at 60 KiB instead of 49 KiB per idle intercepted
/// connection (BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    keep_inherited_descriptors();
    cordon::cli::main(give_back, default_signals)
}

/// Mark every descriptor above stderr that cordon was started with close-on-exec, before anything else runs.
/// Rust opens its own descriptors close-on-exec, but those a caller left open (a connected socket to a host
/// service on fd 5, say) would otherwise pass to everything cordon starts: the jailed command first of all.
/// What cordon hands a child on purpose, it hands explicitly. `close_range` (Linux 5.11) in one call; on older
/// kernels, each descriptor `/proc/self/fd` lists.
#[expect(
    unsafe_code,
    reason = "close_range and fcntl on raw descriptor numbers have no safe binding"
)]
fn keep_inherited_descriptors() {
    // SECURITY: a descriptor inherited by cordon never reaches a jailed command.
    // SAFETY: close_range with CLOSE_RANGE_CLOEXEC only sets a flag on descriptors; it closes nothing and reads
    // no memory.
    let flagged = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC) } == 0;
    if flagged {
        return;
    }
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    let fds: Vec<i32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|fd| *fd > 2)
        .collect();
    for fd in fds {
        // SAFETY: F_SETFD on a number that is not (or no longer) open fails with EBADF and changes nothing.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
}

/// Make `command` start its program as a service manager starts one: every signal's disposition at its default
/// and none blocked. A disposition of "ignore" (and the signal mask) survives exec, so a jail started under
/// `nohup` or as a shell's background job (SIGINT and SIGQUIT ignored) would hand the jailed command signals it
/// could not even trap, and the SIGINT cordon passes on would be lost. `cordon jail` gives every jail's first
/// process this (the library forbids unsafe code; this is the one call between fork and exec).
#[expect(
    unsafe_code,
    reason = "pre_exec runs code between fork and exec, which has no safe binding"
)]
fn default_signals(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SECURITY: the jailed command starts with default signal dispositions and an empty signal mask.
    // SAFETY: the closure allocates nothing and calls only sigaction, sigemptyset, sigprocmask and the raw
    // rt_sigaction system call, which are async-signal-safe, as code between fork and exec in a threaded process
    // must be.
    unsafe {
        command.pre_exec(|| {
            let mut default: libc::sigaction = std::mem::zeroed();
            default.sa_sigaction = libc::SIG_DFL;
            for signal in 1..=libc::SIGRTMAX() {
                // SIGKILL and SIGSTOP cannot be changed, nor, through sigaction, the two the C library keeps for
                // itself (EINVAL), which are reset below.
                if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                    libc::sigaction(signal, &default, std::ptr::null_mut());
                }
            }
            // The C library's own real-time signals (32 and 33 in glibc, below SIGRTMIN) are ignored in a child
            // that posix_spawn made of a threaded process, and an ignored disposition survives exec: cordon
            // itself started that way would hand them on. sigaction refuses them, so the kernel is asked
            // directly: rt_sigaction(signal, {SIG_DFL, no flags, no restorer, empty mask}, NULL, 8).
            let kernel_default: [libc::c_ulong; 4] = [libc::SIG_DFL as libc::c_ulong, 0, 0, 0];
            for signal in 32..libc::SIGRTMIN() {
                libc::syscall(
                    libc::SYS_rt_sigaction,
                    signal,
                    kernel_default.as_ptr(),
                    std::ptr::null_mut::<libc::c_void>(),
                    8usize,
                );
            }
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            if libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Hand back to the system the pages this thread's heap no longer uses. mimalloc returns the pages of a freed
/// large block (a WebSocket message, a decoded body) only when the thread owning them next allocates or
/// frees, so a worker that goes idle after a burst would keep them: six WebSockets relaying 12 MiB messages
/// left over 100 MiB resident after they closed (tests/it/websocket/memory.rs). The runtime calls this on a
/// worker about to park, at most once a second.
#[expect(unsafe_code, reason = "one call into the allocator, which has no safe binding")]
fn give_back() {
    // SAFETY: mi_collect takes no pointers and may be called on any thread at any time.
    unsafe { libmimalloc_sys::mi_collect(true) }
}
