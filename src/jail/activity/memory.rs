//! A waiting caller's memory, read with `process_vm_readv(2)`: its paths, its `argv`, its `struct open_how`.
//!
//! Not `/proc/PID/mem`: a process made non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`, a change of its credentials,
//! the exec of a program it may not read) has its `/proc/PID/mem` owned by root, which cordon without root (the
//! project jail) may not open, while `process_vm_readv` asks only the ptrace access check, which cordon passes
//! for every process of the jail: the same user, and all capabilities in the jail's user namespace, which is its
//! own. Nor a descriptor kept open per process: a child made by `vfork` (`posix_spawn`, Python's `subprocess`)
//! shares its parent's memory until it starts its program, and a kept descriptor would go on reading the parent's.
//! Each read here goes to the memory the thread has at that moment; the caller checks afterwards that the call
//! still waits ([`cordon_unotify::Listener::is_valid`]), so the thread, and its pid, were that one throughout.

use std::io::IoSliceMut;

use nix::sys::uio::{RemoteIoVec, process_vm_readv};
use nix::unistd::Pid;

/// Why something in the caller's memory could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemoryUnreadable(pub(crate) String);

/// The memory of one waiting thread.
pub(crate) struct Memory {
    pid: Pid,
}

/// The size of a page, the unit in which memory is mapped (a read never crosses one, so an unmapped page after a
/// string does not fail it).
const PAGE: u64 = 4096;

impl Memory {
    /// The memory of the thread `tid` (as cordon's PID namespace numbers it).
    pub(crate) fn of(tid: u32) -> Memory {
        Memory {
            pid: Pid::from_raw(i32::try_from(tid).unwrap_or(0)),
        }
    }

    /// Fill `buf` from `addr` (within one page), returning how much was read.
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<usize, MemoryUnreadable> {
        let base = usize::try_from(addr).map_err(|_| MemoryUnreadable(format!("address {addr:#x}")))?;
        let remote = [RemoteIoVec { base, len: buf.len() }];
        process_vm_readv(self.pid, &mut [IoSliceMut::new(buf)], &remote)
            .map_err(|e| MemoryUnreadable(format!("memory of pid {} at {addr:#x}: {}", self.pid, e.desc())))
    }

    /// The NUL-terminated bytes at `addr`, at most `most` of them (and whether there were more).
    pub(crate) fn string(&self, addr: u64, most: usize) -> Result<(Vec<u8>, bool), MemoryUnreadable> {
        if addr == 0 {
            return Err(MemoryUnreadable("a null pointer".into()));
        }
        let mut out = Vec::new();
        let mut at = addr;
        while out.len() < most {
            let room = usize::try_from(PAGE - (at % PAGE)).unwrap_or(1);
            let mut buf = vec![0u8; room.min(most - out.len())];
            let n = self.read(at, &mut buf)?;
            if n == 0 {
                return Err(MemoryUnreadable(format!(
                    "memory of pid {} at {at:#x}: nothing",
                    self.pid
                )));
            }
            if let Some(end) = buf[..n].iter().position(|&b| b == 0) {
                out.extend_from_slice(&buf[..end]);
                return Ok((out, false));
            }
            out.extend_from_slice(&buf[..n]);
            at = at.saturating_add(n as u64);
        }
        Ok((out, true))
    }

    /// `N` bytes at `addr`.
    pub(crate) fn bytes<const N: usize>(&self, addr: u64) -> Result<[u8; N], MemoryUnreadable> {
        let mut buf = [0u8; N];
        let mut got = 0;
        while got < N {
            let at = addr.saturating_add(got as u64);
            let room = usize::try_from(PAGE - (at % PAGE)).unwrap_or(1).min(N - got);
            let n = self.read(at, &mut buf[got..got + room])?;
            if n == 0 {
                return Err(MemoryUnreadable(format!(
                    "memory of pid {} at {at:#x}: nothing",
                    self.pid
                )));
            }
            got += n;
        }
        Ok(buf)
    }

    /// The pointer-sized word at `addr`.
    pub(crate) fn word(&self, addr: u64) -> Result<u64, MemoryUnreadable> {
        self.bytes::<8>(addr).map(u64::from_ne_bytes)
    }

    /// The NULL-terminated array of strings at `addr` (an `argv`): at most `most` strings and `most_bytes` bytes
    /// in all, and whether it was cut short (by those bounds, or by memory that could not be read).
    pub(crate) fn strings(&self, addr: u64, most: usize, most_bytes: usize) -> (Vec<String>, bool) {
        let mut out = Vec::new();
        let mut bytes = 0;
        for i in 0..most as u64 {
            let Ok(ptr) = self.word(addr.saturating_add(8 * i)) else {
                return (out, true);
            };
            if ptr == 0 {
                return (out, false);
            }
            let Ok((s, cut)) = self.string(ptr, most_bytes.saturating_sub(bytes).max(1)) else {
                return (out, true);
            };
            bytes += s.len();
            out.push(String::from_utf8_lossy(&s).into_owned());
            if cut || bytes >= most_bytes {
                return (out, true);
            }
        }
        (out, true)
    }
}
