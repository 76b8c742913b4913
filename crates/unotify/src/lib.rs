//! Seccomp user notification, as cordon's jails use it to record what a jailed command runs and writes: a
//! filter whose matches wait for a supervisor ([`install`]), and the supervisor's side ([`Listener`]):
//! receive each waiting system call, check that it is still waiting, and let it go on.
//!
//! It is a record, not a gate: the supervisor always lets the call continue
//! (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`), and what it reads of the caller's memory may be changed by another
//! thread of the caller before the kernel reads it (seccomp_unotify(2), "Caveats").
//!
//! This crate holds cordon's unsafe code, and nothing else: the `seccomp(2)` and `ioctl(2)` calls the libc crate
//! declares but no maintained crate wraps without a C library (libseccomp) the build would then need.
//! Every unsafe block says why it is sound.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// The action of a filter rule that makes the call wait for the supervisor.
pub const RET_USER_NOTIF: u32 = libc::SECCOMP_RET_USER_NOTIF;

/// One classic BPF instruction, as filter compilers (seccompiler) make them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instruction {
    /// The operation.
    pub code: u16,
    /// Where to go when true.
    pub jt: u8,
    /// Where to go when false.
    pub jf: u8,
    /// The operand.
    pub k: u32,
}

/// A system call waiting for the supervisor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Notification {
    /// Its id, to answer it by.
    pub id: u64,
    /// The calling thread, as the supervisor's PID namespace numbers it.
    pub pid: u32,
    /// The system call's number.
    pub nr: i32,
    /// Its architecture (`AUDIT_ARCH_*`).
    pub arch: u32,
    /// Its arguments.
    pub args: [u64; 6],
}

/// The supervisor's end of a filter: the notifications of every process under it.
#[derive(Debug)]
pub struct Listener {
    fd: OwnedFd,
    /// The size of `struct seccomp_notif` the running kernel writes.
    notif_size: usize,
}

fn seccomp(op: libc::c_uint, flags: libc::c_ulong, arg: *mut libc::c_void) -> libc::c_long {
    // SAFETY: seccomp(2) reads (SET_MODE_FILTER: a `sock_fprog`) or writes (GET_NOTIF_SIZES: a
    // `seccomp_notif_sizes`) only the object `arg` points at; both callers pass a pointer to such an object that
    // lives across the call.
    unsafe { libc::syscall(libc::SYS_seccomp, op, flags, arg) }
}

/// The size of `struct seccomp_notif` the running kernel uses (at least the one libc declares).
fn notif_size() -> io::Result<usize> {
    let mut sizes = libc::seccomp_notif_sizes {
        seccomp_notif: 0,
        seccomp_notif_resp: 0,
        seccomp_data: 0,
    };
    let r = seccomp(libc::SECCOMP_GET_NOTIF_SIZES, 0, std::ptr::addr_of_mut!(sizes).cast());
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(usize::from(sizes.seccomp_notif).max(std::mem::size_of::<libc::seccomp_notif>()))
}

/// Put the calling thread, and every process it starts from now on, under `filter`, whose matches wait for a
/// supervisor; the supervisor's listener. Sets `no_new_privs` first (required without `CAP_SYS_ADMIN`).
pub fn install(filter: &[Instruction]) -> io::Result<Listener> {
    let size = notif_size()?;
    let mut program: Vec<libc::sock_filter> = filter
        .iter()
        .map(|i| libc::sock_filter {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        })
        .collect();
    let len = u16::try_from(program.len()).map_err(|_| io::Error::other("the filter is too long"))?;
    let mut fprog = libc::sock_fprog {
        len,
        filter: program.as_mut_ptr(),
    };
    // SAFETY: prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) takes no pointer.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = seccomp(
        libc::SECCOMP_SET_MODE_FILTER,
        libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
        std::ptr::addr_of_mut!(fprog).cast(),
    );
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = RawFd::try_from(fd).map_err(|_| io::Error::other("seccomp returned no descriptor"))?;
    // SAFETY: with NEW_LISTENER, seccomp(2) returns a new descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    Ok(Listener { fd, notif_size: size })
}

impl Listener {
    /// The listener whose descriptor is `fd` (received from the process that installed the filter).
    pub fn from_fd(fd: OwnedFd) -> io::Result<Listener> {
        Ok(Listener {
            fd,
            notif_size: notif_size()?,
        })
    }

    /// The descriptor, to hand to the supervisor.
    pub fn into_fd(self) -> OwnedFd {
        self.fd
    }

    /// Wait for the next notification. `ENOENT` when the call it was for went away meanwhile (the caller was
    /// killed): receive again.
    pub fn recv(&self) -> io::Result<Notification> {
        // A zeroed buffer the size the kernel writes, aligned for `seccomp_notif` (u64 words).
        let words = self.notif_size.div_ceil(8);
        let mut buf = vec![0u64; words];
        // SAFETY: NOTIF_RECV writes at most the kernel's `seccomp_notif` size into the buffer, which is that
        // large, zeroed as the kernel requires, and lives across the call.
        let r = unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_RECV, buf.as_mut_ptr()) };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the buffer holds at least a whole `seccomp_notif` (its size is at least libc's), 8-byte
        // aligned, which the kernel just filled; the struct is plain data, valid for any bytes.
        let n: libc::seccomp_notif = unsafe { std::ptr::read(buf.as_ptr().cast()) };
        Ok(Notification {
            id: n.id,
            pid: n.pid,
            nr: n.data.nr,
            arch: n.data.arch,
            args: n.data.args,
        })
    }

    /// Whether the call `id` still waits (its thread was not killed, its pid not reused).
    pub fn is_valid(&self, id: u64) -> bool {
        let mut id = id;
        // SAFETY: NOTIF_ID_VALID reads one u64 from the pointer, which points at a live u64.
        unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &mut id) == 0 }
    }

    /// Let the call `id` go on, as if no filter had stopped it.
    pub fn allow(&self, id: u64) -> io::Result<()> {
        let mut resp = libc::seccomp_notif_resp {
            id,
            val: 0,
            error: 0,
            flags: libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
        };
        // SAFETY: NOTIF_SEND reads one `seccomp_notif_resp` from the pointer, which points at a live one.
        let r = unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_SEND, &mut resp) };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// Hand `listener` to the supervisor at the other end of `socket` (over `SCM_RIGHTS`), with `word` (a few bytes
/// the supervisor reads with it).
pub fn send(listener: Listener, socket: &std::os::unix::net::UnixStream, word: &[u8]) -> io::Result<()> {
    use nix::sys::socket::{ControlMessage, MsgFlags, sendmsg};
    let fds = [listener.fd.as_raw_fd()];
    let iov = [io::IoSlice::new(word)];
    sendmsg::<()>(
        socket.as_raw_fd(),
        &iov,
        &[ControlMessage::ScmRights(&fds)],
        MsgFlags::empty(),
        None,
    )
    .map_err(io::Error::from)?;
    Ok(())
}

/// Receive a listener sent with [`send`] on `socket`, and the word that came with it (`None` for the listener
/// when the word came alone).
pub fn receive(socket: &std::os::unix::net::UnixStream) -> io::Result<(Option<Listener>, Vec<u8>)> {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
    let mut word = vec![0u8; 512];
    let mut space = nix::cmsg_space!([RawFd; 1]);
    let (received, n) = {
        let mut iov = [io::IoSliceMut::new(&mut word)];
        let msg = recvmsg::<()>(
            socket.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        )
        .map_err(io::Error::from)?;
        let mut received: Vec<RawFd> = Vec::new();
        for cmsg in msg.cmsgs().map_err(io::Error::from)? {
            if let ControlMessageOwned::ScmRights(fds) = cmsg {
                received.extend(fds);
            }
        }
        (received, msg.bytes)
    };
    word.truncate(n);
    let mut owned: Vec<OwnedFd> = received
        .into_iter()
        // SAFETY: each descriptor was installed in this process by the recvmsg just above (SCM_RIGHTS, with
        // MSG_CMSG_CLOEXEC) and is owned by nothing else yet.
        .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
        .collect();
    let listener = match owned.pop() {
        Some(fd) => Some(Listener::from_fd(fd)?),
        None => None,
    };
    Ok((listener, word))
}

impl AsFd for Listener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for Listener {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests;
