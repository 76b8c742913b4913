//! The activity filter: which system calls of a jailed command wait for cordon to record them. Programs started
//! (`execve`, `execveat`), files opened for writing or created (`open`/`openat` with `O_WRONLY`, `O_RDWR`,
//! `O_CREAT` or `O_TRUNC`, hence `O_TMPFILE`; every `openat2`, whose flags are in memory the filter cannot read
//! and cordon then reads; `creat`, `truncate`), renamed (`rename*`), removed (`unlink*`, `rmdir`), and folders,
//! nodes and links made (`mkdir*`, `mknod*`, `link*`, `symlink*`). A call of another ABI (x32, i386) is refused or
//! killed by the base filter ([`crate::jail::seccomp`]), whose action takes precedence over this one's. Metadata
//! (`chmod`, `chown`, `utimensat`, extended attributes) is not recorded, nor `open_by_handle_at` (it needs
//! `CAP_DAC_READ_SEARCH`, which no jailed process has). Compiled by seccompiler, whose rules say "trace" with a
//! mark of cordon's own; the mark is then made the user-notification action seccompiler does not know.

use std::collections::BTreeMap;

use cordon_unotify::Instruction;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

/// The trace data seccompiler writes into the rules' action, replaced by [`cordon_unotify::RET_USER_NOTIF`].
const MARK: u32 = 0x1ced;
/// `BPF_RET | BPF_K`.
const RET: u16 = 0x06;
/// The open flags that make an `open` a write.
const WRITING: [libc::c_int; 4] = [libc::O_WRONLY, libc::O_RDWR, libc::O_CREAT, libc::O_TRUNC];

fn e(what: impl std::fmt::Display) -> String {
    format!("activity filter: {what}")
}

/// Rules matching an open whose flags (argument `arg`) ask for any of [`WRITING`].
fn writing(arg: u8) -> Result<Vec<SeccompRule>, String> {
    WRITING
        .iter()
        .map(|&flag| {
            let flag = u64::try_from(flag).map_err(e)?;
            let c =
                SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::MaskedEq(flag), flag).map_err(e)?;
            SeccompRule::new(vec![c]).map_err(e)
        })
        .collect()
}

/// The calls recorded whatever their arguments, on this architecture.
fn always() -> Vec<i64> {
    let mut calls = vec![
        libc::SYS_execve,
        libc::SYS_execveat,
        libc::SYS_openat2,
        libc::SYS_truncate,
        libc::SYS_renameat,
        libc::SYS_renameat2,
        libc::SYS_unlinkat,
        libc::SYS_mkdirat,
        libc::SYS_mknodat,
        libc::SYS_linkat,
        libc::SYS_symlinkat,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        libc::SYS_creat,
        libc::SYS_rename,
        libc::SYS_unlink,
        libc::SYS_rmdir,
        libc::SYS_mkdir,
        libc::SYS_mknod,
        libc::SYS_link,
        libc::SYS_symlink,
    ]);
    calls
}

/// The filter, as instructions for [`cordon_unotify::install`].
pub(crate) fn program() -> Result<Vec<Instruction>, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = always().into_iter().map(|nr| (nr, Vec::new())).collect();
    rules.insert(libc::SYS_openat, writing(2)?);
    #[cfg(target_arch = "x86_64")]
    rules.insert(libc::SYS_open, writing(1)?);
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(e)?;
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Trace(MARK), arch).map_err(e)?;
    let program = BpfProgram::try_from(filter).map_err(e)?;
    let traced = libc::SECCOMP_RET_TRACE | MARK;
    let mut marked = 0;
    let out: Vec<Instruction> = program
        .into_iter()
        .map(|op| {
            let k = if op.code == RET && op.k == traced {
                marked += 1;
                cordon_unotify::RET_USER_NOTIF
            } else {
                op.k
            };
            Instruction {
                code: op.code,
                jt: op.jt,
                jf: op.jf,
                k,
            }
        })
        .collect();
    if marked == 0 {
        return Err(e("seccompiler wrote no rule with cordon's mark"));
    }
    Ok(out)
}

#[cfg(test)]
#[path = "filter_tests.rs"]
mod tests;
