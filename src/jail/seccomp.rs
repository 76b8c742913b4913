//! The seccomp filter of a jailed command without root: it may not create Unix sockets. The file system is the
//! host's, read-only, so a socket a host service listens on by path (a Docker daemon, an SSH agent, D-Bus) would
//! otherwise be a way around the proxy; socket pairs (no path, nothing to reach) stay allowed. The filter is made
//! by `seccompiler` and applied to one thread, so the relay beside the command keeps its own bridge.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

/// The filter: `socket(AF_UNIX, ...)` fails with `EPERM`, everything else is allowed.
pub(crate) fn no_unix_sockets() -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| format!("seccomp: {e}"))?;
    let unix = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Eq,
        u64::try_from(libc::AF_UNIX).map_err(|e| e.to_string())?,
    )
    .map_err(|e| format!("seccomp: {e}"))?;
    let rule = SeccompRule::new(vec![unix]).map_err(|e| format!("seccomp: {e}"))?;
    let rules = BTreeMap::from([(libc::SYS_socket, vec![rule])]);
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(u32::try_from(libc::EPERM).map_err(|e| e.to_string())?),
        arch,
    )
    .map_err(|e| format!("seccomp: {e}"))?;
    BpfProgram::try_from(filter).map_err(|e| format!("seccomp: {e}"))
}

/// Apply `program` to the calling thread (and what it starts from now on).
pub(crate) fn apply(program: &BpfProgram) -> Result<(), String> {
    seccompiler::apply_filter(program).map_err(|e| format!("cannot apply the seccomp filter: {e}"))
}

#[cfg(test)]
#[path = "seccomp_tests.rs"]
mod tests;
