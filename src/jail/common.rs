//! What both jails share: the options, which sandbox a jail is for, and running the jailed command.

use ipnet::Ipv4Net;

use super::net::Firewall;
use crate::config::Config;

/// What to jail and how.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// The declared sandbox (default: the only one the config declares).
    pub(crate) sandbox: Option<String>,
    /// The pool the jail's /30 is taken from.
    pub(crate) subnet: Ipv4Net,
    /// Run the command as this user (`name`, `uid` or `uid:gid`); default: the user behind sudo.
    pub(crate) user: Option<String>,
    /// Let the command run as root (still confined, without capabilities).
    pub(crate) allow_root: bool,
    /// The configuration file, hidden from the command like cordon's other files.
    pub(crate) config_file: Option<std::path::PathBuf>,
    /// nftables or iptables (default: whichever the host has, nftables first).
    pub(crate) firewall: Option<Firewall>,
    /// The command and its arguments.
    pub(crate) command: Vec<String>,
    /// Without root: the project folder the command may write (see `user.rs`).
    pub(crate) project: Option<std::path::PathBuf>,
    /// Which home the command gets (default: a private, empty one).
    pub(crate) home: super::view::HomeMode,
    /// Leave `.git/config` and `.git/hooks` of the writable folder writable.
    pub(crate) writable_git: bool,
}

/// The sandbox the jail is for: named, or the config's only one.
pub(crate) fn pick_sandbox(config: &Config, wanted: Option<&str>) -> Result<String, String> {
    match wanted {
        Some(id) if config.sandboxes.iter().any(|s| s.id == id) => Ok(id.to_string()),
        Some(id) => Err(format!(
            "--sandbox {id}: the config declares no such sandbox (a jail is for a sandbox declared under \
             `sandboxes:`, which it then knows by the jail's address)"
        )),
        None => match config.sandboxes.as_slice() {
            [one] => Ok(one.id.clone()),
            [] => Err("the config declares no sandboxes; declare one under `sandboxes:`".into()),
            _ => Err("the config declares several sandboxes; say which with --sandbox ID".into()),
        },
    }
}

/// Start `command` with nothing of cordon's environment but `PATH` and wait for it, passing SIGINT and SIGTERM
/// on; its exit code (128 + signal if a signal ended it).
pub(super) async fn wait(command: &mut tokio::process::Command) -> Result<i32, String> {
    use std::os::unix::process::ExitStatusExt;
    use tokio::signal::unix::{SignalKind, signal};
    let mut child = command
        // SECURITY: nothing of cordon's environment (an `env:` secret, CORDON_VAULT_KEY) reaches the command,
        // nor bubblewrap's own environment, which a root command could read.
        .env_clear()
        .env("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        .spawn()
        .map_err(|e| format!("cannot start {:?}: {e}", command.as_std().get_program()))?;
    let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status.map_err(|e| e.to_string())?,
            _ = term.recv() => forward(&child, "TERM"),
            _ = int.recv() => forward(&child, "INT"),
        }
    };
    Ok(status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}

fn forward(child: &tokio::process::Child, signal: &str) {
    if let Some(pid) = child.id() {
        let _ = std::process::Command::new("kill")
            .args([format!("-{signal}"), pid.to_string()])
            .status();
    }
}
