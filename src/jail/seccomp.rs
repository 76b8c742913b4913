//! The seccomp filters of the jails, made by `seccompiler`: defence in depth around the namespaces, refusing the
//! kernel interfaces that lead around them. Two filters, stacked:
//!
//! - [`base`], on every process a jail starts (the root jail's command, by bubblewrap's `--seccomp`; the
//!   relay of the jail without root and its threads, hence also its command), refuses with `EPERM`:
//!   - **io_uring** (`io_uring_setup`, `_enter`, `_register`): its `IORING_OP_SOCKET`/`IORING_OP_CONNECT`
//!     create and connect sockets without the filtered calls;
//!   - **other processes' memory and files**: `ptrace`, `process_vm_readv`/`writev`, `pidfd_getfd`;
//!   - **the kernel keyrings** (`keyctl`, `add_key`, `request_key`): the user keyring `@u` is found by uid,
//!     whatever the session keyring, so the root jail's command (no user namespace) would otherwise read and
//!     write the keys of the user it runs as;
//!   - `userfaultfd`, `perf_event_open`, `bpf`: kernel attack surface no jailed tool needs;
//!   - **socket families** but `AF_INET`, `AF_INET6`, `AF_UNIX` and route netlink (`NETLINK_ROUTE`, which
//!     glibc's resolver asks about the namespace's addresses): no `AF_VSOCK` (not namespaced: a host vsock
//!     port would be reachable), `AF_PACKET`, other netlink families, Bluetooth, ...;
//!   - **foreign ABIs**: an x32 call (number with `__X32_SYSCALL_BIT`) fails, whatever its number, so no
//!     rule is dodged by its x32 twin; a call of another architecture (i386 `int 0x80`, hence `socketcall`)
//!     kills the process.
//! - [`no_unix_sockets`], on the command of the jail without root only (its file system is the host's, where
//!   host services listen on paths): `socket(AF_UNIX, ...)` fails, and so does `socketpair` of any type but
//!   `SOCK_STREAM` and `SOCK_SEQPACKET`. A connected stream or seqpacket pair ignores or refuses an address
//!   (`sendto`/`sendmsg` with one, `connect`), while a datagram pair sends to any path it is given; seccomp
//!   cannot read the address a `sendto`/`sendmsg` points at, so the datagram pair is what is refused. Pairs
//!   that programs use (Python multiprocessing, git, shells: streams) keep working.
//!
//! What seccomp needs: `CONFIG_SECCOMP_FILTER` (every distribution kernel); the arch check is built in.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch, sock_filter,
};

/// What [`base`] refuses, for the jails' start-up line.
pub(crate) const BASE: &str = "io_uring, ptrace, keyrings, bpf, perf, userfaultfd, x32 and foreign ABIs, socket \
                               families but IPv4, IPv6, Unix and route netlink refused";
/// What [`no_unix_sockets`] adds, for the start-up line of the jail without root.
pub(crate) const COMMAND: &str = "no Unix sockets but stream and seqpacket pairs";

/// Calls refused whatever their arguments.
const REFUSED: [libc::c_long; 13] = [
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_pidfd_getfd,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_userfaultfd,
    libc::SYS_perf_event_open,
    libc::SYS_bpf,
];

/// The socket families a jailed process may open.
const FAMILIES: [libc::c_int; 4] = [libc::AF_UNIX, libc::AF_INET, libc::AF_INET6, libc::AF_NETLINK];

/// `socketpair` types the command of the jail without root may make (what they send goes to the pair's
/// other end, never to an address).
const PAIR_TYPES: [libc::c_int; 2] = [libc::SOCK_STREAM, libc::SOCK_SEQPACKET];

fn e(what: impl std::fmt::Display) -> String {
    format!("seccomp: {what}")
}

/// `args[arg] op value`, on the 32 bits the kernel reads of an `int` argument.
fn cond(arg: u8, op: SeccompCmpOp, value: libc::c_int) -> Result<SeccompCondition, String> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, u64::try_from(value).map_err(e)?).map_err(e)
}

/// A rule that matches when all `conditions` hold.
fn all(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
    SeccompRule::new(conditions).map_err(e)
}

/// Compile `rules` (a call matching one of its rules fails with `EPERM`) behind the x32 guard.
fn compile(rules: BTreeMap<i64, Vec<SeccompRule>>) -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(e)?;
    let eperm = u32::try_from(libc::EPERM).map_err(e)?;
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(eperm), arch).map_err(e)?;
    let program = BpfProgram::try_from(filter).map_err(e)?;
    let mut guarded = x32_guard(eperm);
    guarded.extend(program);
    Ok(guarded)
}

/// The filter of every process a jail starts (see the module doc).
pub(crate) fn base() -> Result<BpfProgram, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = REFUSED.iter().map(|&nr| (nr, Vec::new())).collect();
    let other_family = FAMILIES
        .iter()
        .map(|&f| cond(0, SeccompCmpOp::Ne, f))
        .collect::<Result<Vec<_>, _>>()?;
    let other_netlink = vec![
        cond(0, SeccompCmpOp::Eq, libc::AF_NETLINK)?,
        cond(2, SeccompCmpOp::Ne, libc::NETLINK_ROUTE)?,
    ];
    rules.insert(libc::SYS_socket, vec![all(other_family)?, all(other_netlink)?]);
    rules.insert(
        libc::SYS_socketpair,
        vec![all(vec![cond(0, SeccompCmpOp::Ne, libc::AF_UNIX)?])?],
    );
    compile(rules)
}

/// The filter of the command of the jail without root, over [`base`]: no Unix socket that could reach a path.
pub(crate) fn no_unix_sockets() -> Result<BpfProgram, String> {
    let unix = all(vec![cond(0, SeccompCmpOp::Eq, libc::AF_UNIX)?])?;
    // The type is the low four bits (SOCK_TYPE_MASK); the rest are SOCK_NONBLOCK and SOCK_CLOEXEC.
    let datagram_pairs = (0..16)
        .filter(|t| !PAIR_TYPES.contains(t))
        .map(|t| all(vec![cond(1, SeccompCmpOp::MaskedEq(0xf), t)?]))
        .collect::<Result<Vec<_>, _>>()?;
    let rules = BTreeMap::from([(libc::SYS_socket, vec![unix]), (libc::SYS_socketpair, datagram_pairs)]);
    compile(rules)
}

/// `AUDIT_ARCH_X86_64` (linux/audit.h): x32 calls come with it, their number marked by the x32 bit.
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
/// `__X32_SYSCALL_BIT` (asm/unistd.h).
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// What `seccompiler` cannot say (it matches numbers one by one, not ranges): on x86-64, a call whose number
/// has the x32 bit fails with `errno`, so no rule of the filter after it is dodged by the x32 twin of its call.
/// Five classic-BPF instructions (linux/filter.h) before the filter's own arch check; nothing of the filter's
/// jumps (relative, forward) changes.
#[cfg(target_arch = "x86_64")]
fn x32_guard(errno: u32) -> Vec<sock_filter> {
    // BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_JMP|BPF_JGE|BPF_K, BPF_RET|BPF_K (linux/bpf_common.h).
    const LOAD: u16 = 0x20;
    const JEQ: u16 = 0x15;
    const JGE: u16 = 0x35;
    const RET: u16 = 0x06;
    let op = |code, k, jt, jf| sock_filter { code, jt, jf, k };
    vec![
        // seccomp_data.arch (offset 4): another architecture goes on to the filter's arch check, which kills.
        op(LOAD, 4, 0, 0),
        op(JEQ, AUDIT_ARCH_X86_64, 0, 3),
        // seccomp_data.nr (offset 0).
        op(LOAD, 0, 0, 0),
        op(JGE, X32_SYSCALL_BIT, 0, 1),
        op(RET, libc::SECCOMP_RET_ERRNO | errno, 0, 0),
    ]
}

/// No x32 on other architectures.
#[cfg(not(target_arch = "x86_64"))]
fn x32_guard(_errno: u32) -> Vec<sock_filter> {
    Vec::new()
}

/// Apply `program` to the calling thread (and the threads and processes it starts from now on).
pub(crate) fn apply(program: &BpfProgram) -> Result<(), String> {
    seccompiler::apply_filter(program).map_err(|e| format!("cannot apply the seccomp filter: {e}"))
}

/// `program` written to `path` and opened again for bubblewrap's `--seccomp FD`: the file, whose descriptor the
/// next command started inherits (drop it once that command started).
pub(crate) fn for_bubblewrap(program: &BpfProgram, path: &std::path::Path) -> Result<std::fs::File, String> {
    use nix::fcntl::{F_SETFD, FdFlag, fcntl};
    std::fs::write(path, to_bytes(program)).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let file = std::fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    fcntl(&file, F_SETFD(FdFlag::empty())).map_err(|e| format!("cannot pass {} on: {e}", path.display()))?;
    Ok(file)
}

/// `program` as the kernel reads it (`struct sock_filter`, native byte order): what bubblewrap's `--seccomp`
/// takes.
pub(crate) fn to_bytes(program: &BpfProgram) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for op in program {
        bytes.extend(op.code.to_ne_bytes());
        bytes.extend([op.jt, op.jf]);
        bytes.extend(op.k.to_ne_bytes());
    }
    bytes
}

#[cfg(test)]
#[path = "seccomp_tests.rs"]
mod tests;
