//! `cordon jail-relay`: what runs first inside a jail without root, as the PID namespace's init (bubblewrap's
//! `--as-pid-1`). The jail has its own network namespace with only a loopback device; the relay listens there on
//! the address `HTTP_PROXY` names and carries each connection over the Unix socket bound into the jail to cordon
//! outside. Before anything else it makes itself non-dumpable and puts itself under the base seccomp filter
//! (every thread it starts inherits it); then it applies the command's filter to its own thread and starts the
//! command, which inherits both: the command cannot create Unix sockets, while the relay's threads, made
//! before, keep their bridge. The relay reaps every process the command leaves behind, as an init does.

use std::net::SocketAddr;
use std::path::PathBuf;

use super::seccomp;

/// Relay `listen` to `socket`, run `command` under the filters, started with default signal dispositions and
/// an empty mask (`child_signals`); its exit code (128 + signal if a signal ended it).
pub(crate) fn run(
    socket: PathBuf,
    activity: Option<PathBuf>,
    listen: SocketAddr,
    command: &[String],
    child_signals: super::common::ChildSignals,
) -> Result<i32, String> {
    let (program, args) = command.split_first().ok_or("no command given; write it after --")?;
    // SECURITY: the command (same uid, same namespaces) can neither ptrace the relay nor open its
    // /proc/PID/mem, fd or environ: the relay's threads are not under the command's filter.
    nix::sys::prctl::set_dumpable(false).map_err(|e| format!("cannot make the relay non-dumpable: {e}"))?;
    seccomp::apply(&seccomp::base()?)?;
    let filter = seccomp::no_unix_sockets()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the relay: {e}"))?;
    let listener = rt
        .block_on(tokio::net::TcpListener::bind(listen))
        .map_err(|e| format!("cannot listen on {listen} inside the jail: {e}"))?;
    rt.spawn(async move {
        loop {
            let Ok((mut inside, _)) = listener.accept().await else {
                continue;
            };
            let socket = socket.clone();
            tokio::spawn(async move {
                match tokio::net::UnixStream::connect(&socket).await {
                    Ok(mut outside) => {
                        let _ = tokio::io::copy_bidirectional(&mut inside, &mut outside).await;
                    }
                    Err(e) => eprintln!("cordon jail: cannot reach cordon through {}: {e}", socket.display()),
                }
            });
        }
    });
    // The activity filter, on this thread only (the relay's threads are not under it), before the command's:
    // handing its listener over takes a Unix socket, which the command's filter refuses.
    if let Some(at) = &activity {
        super::activity::arm(at)?;
    }
    // SECURITY: the command (and everything it starts) cannot open a Unix socket to a host service.
    seccomp::apply(&filter)?;
    let mut command = std::process::Command::new(program);
    // SECURITY: the command starts with default signal dispositions and none blocked (a process spawned from a
    // threaded one would otherwise get the C library's two internal signals ignored).
    child_signals(&mut command);
    let child = command
        .args(args)
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    reap_until(child.id())
}

/// Reap every child (orphans come to the init) until `pid` ends; its exit code, or 128 + the signal.
fn reap_until(pid: u32) -> Result<i32, String> {
    use nix::sys::wait::{WaitStatus, waitpid};
    let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).map_err(|e| e.to_string())?);
    loop {
        match waitpid(None, None) {
            Ok(WaitStatus::Exited(p, code)) if p == pid => return Ok(code),
            Ok(WaitStatus::Signaled(p, signal, _)) if p == pid => return Ok(128 + signal as i32),
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(format!("waiting for the command: {e}")),
        }
    }
}
