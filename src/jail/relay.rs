//! `cordon jail-relay`: what runs first inside a jail without root. The jail has its own network namespace with
//! only a loopback device; the relay listens there on the address `HTTP_PROXY` names and carries each
//! connection over the Unix socket bound into the jail to cordon outside. Then it applies the seccomp filter
//! to its own thread and starts the command, which inherits the filter: the command cannot create Unix sockets,
//! while the relay's threads, made before, keep their bridge.

use std::net::SocketAddr;
use std::path::PathBuf;

use super::seccomp;

/// Relay `listen` to `socket`, run `command` under the filter; its exit code (128 + signal if a signal ended it).
pub(crate) fn run(socket: PathBuf, listen: SocketAddr, command: &[String]) -> Result<i32, String> {
    use std::os::unix::process::ExitStatusExt;
    let (program, args) = command.split_first().ok_or("no command given; write it after --")?;
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
    // SECURITY: the command (and everything it starts) cannot open a Unix socket to a host service.
    seccomp::apply(&filter)?;
    let status = std::process::Command::new(program)
        .args(args)
        .status()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    Ok(status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}
