//! `cordon jail [--sandbox ID] -- CMD ...`: the command line of `crate::jail`.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::Config;
use crate::jail::{self, Firewall, Options};

/// Arguments of `cordon jail`.
#[derive(clap::Args)]
pub(crate) struct JailArgs {
    /// Configuration file (default: the embedded config/cordon.yaml). Also read from CORDON_CONFIG.
    #[arg(long, env = "CORDON_CONFIG")]
    pub(crate) config: Option<PathBuf>,
    /// The declared sandbox to jail the command as (default: the config's only sandbox).
    #[arg(long)]
    pub(crate) sandbox: Option<String>,
    /// The IPv4 range the jail's /30 link is taken from (by a hash of the sandbox id).
    #[arg(long, default_value = jail::plan::DEFAULT_SUBNET)]
    pub(crate) subnet: String,
    /// Run the command as this user (name, uid or uid:gid); default: the user behind sudo.
    #[arg(long)]
    pub(crate) user: Option<String>,
    /// Let the command run as root when no other user is given (it is still confined and has no
    /// capabilities, but root owns every file it can reach).
    #[arg(long)]
    pub(crate) allow_root: bool,
    /// Install the rules with nftables or iptables (default: nftables when the host has it).
    #[arg(long, value_parser = ["nftables", "iptables"])]
    pub(crate) firewall: Option<String>,
    /// Without root: the folder the command may write (everything else is read-only, the user's keys and
    /// credentials are hidden, and the only way out is cordon through a Unix socket). As root, without it: the
    /// gateway jail (a veth pair and firewall rules).
    #[arg(long)]
    pub(crate) project: Option<PathBuf>,
    /// The home the command gets: `private` (an empty folder of its own, removed when the jail ends) or `real`
    /// (the user's, read-only, with keys and credentials hidden).
    #[arg(long, value_parser = ["private", "real"], default_value = "private")]
    pub(crate) home: String,
    /// Leave git's files in the writable folder writable: each repository's config, config.worktree, commondir,
    /// hooks, info and alternates (by default they are read-only inside: git on the host runs what they say).
    #[arg(long)]
    pub(crate) writable_git: bool,
    /// CPUs the jail may use, e.g. 1.5 (a cgroup's CPU quota; over the configuration's `jail.cpu`).
    #[arg(long, value_name = "CPUS", value_parser = crate::config::jail::parse_cpus)]
    pub(crate) cpu: Option<f64>,
    /// Memory the jail may use, without swap, e.g. 2GiB (its processes are OOM-killed past it).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub(crate) memory: Option<u64>,
    /// Processes and threads the jail may have at once, e.g. 512 (a fork past it fails).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) pids: Option<u64>,
    /// The size of each private writable folder (/tmp, /var/tmp, ...), e.g. 5GiB (writes past it fail).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub(crate) disk: Option<u64>,
    /// Stop the jail after this long, e.g. 2h (SIGTERM, then SIGKILL; cordon exits 124).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub(crate) wall: Option<std::time::Duration>,
    /// Stop the jail after this long doing nothing (no CPU time, no bytes, no process started), e.g. 15m
    /// (cordon exits 123).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub(crate) idle: Option<std::time::Duration>,
    /// What keeps the command apart from the host: `namespace` (bubblewrap) or `gvisor` (gVisor's user-space
    /// kernel, runsc; needs root); default: the configuration's `jail.isolation` (its policy's first).
    #[arg(long, value_parser = ["namespace", "gvisor"])]
    pub(crate) isolation: Option<String>,
    /// Remove what an earlier jail for the sandbox left (after a crash), then exit.
    #[arg(long)]
    pub(crate) cleanup: bool,
    /// The command and its arguments, after `--`.
    #[arg(last = true)]
    pub(crate) command: Vec<String>,
}

/// Run `cordon jail`; the exit code is the command's.
pub(crate) fn main(config: Config, args: JailArgs, child_signals: jail::ChildSignals) -> ExitCode {
    let subnet = match args.subnet.parse() {
        Ok(s) => s,
        Err(_) => {
            eprintln!(
                "cordon jail: --subnet {:?} is not an IPv4 range such as 10.200.0.0/16",
                args.subnet
            );
            return ExitCode::from(2);
        }
    };
    if args.cleanup {
        return match jail::cleanup(&config, args.sandbox.as_deref(), subnet) {
            Ok(found) if found.is_empty() => {
                outln!("nothing to remove");
                ExitCode::SUCCESS
            }
            Ok(found) => {
                outln!("removed: {}", found.join(", "));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("cordon jail: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let firewall = args.firewall.as_deref().map(|f| match f {
        "iptables" => Firewall::Iptables,
        _ => Firewall::Nft,
    });
    let options = Options {
        sandbox: args.sandbox,
        subnet,
        user: args.user,
        allow_root: args.allow_root,
        config_file: args.config.clone(),
        firewall,
        command: args.command,
        project: args.project,
        home: if args.home == "real" {
            jail::HomeMode::Real
        } else {
            jail::HomeMode::Private
        },
        writable_git: args.writable_git,
        limits: crate::config::jail::JailLimits {
            cpu: args.cpu,
            memory: args.memory,
            pids: args.pids,
            disk: args.disk,
            wall: args.wall,
            idle: args.idle,
        },
        child_signals,
        isolation: args
            .isolation
            .as_deref()
            .and_then(|i| crate::config::jail::Isolation::parse(i).ok()),
    };
    match jail::run(config, options) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            eprintln!("cordon jail: {e}");
            ExitCode::from(125)
        }
    }
}

/// A size such as `2GiB` or `500MB`.
fn parse_size(text: &str) -> Result<u64, String> {
    match text.parse::<bytesize::ByteSize>() {
        Ok(s) if s.as_u64() > 0 => Ok(s.as_u64()),
        Ok(_) => Err("is zero; give a size such as 2GiB".into()),
        Err(e) => Err(format!("{text:?} is not a size ({e}); write e.g. 2GiB or 500MiB")),
    }
}

/// A duration such as `2h` or `15m`.
fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    match humantime::parse_duration(text) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err("is zero; give a duration such as 15m".into()),
        Err(e) => Err(format!("{text:?} is not a duration ({e}); write e.g. 30s, 15m or 2h")),
    }
}

/// Arguments of `cordon jail-relay` (inside a jail without root; not for people).
#[derive(clap::Args)]
pub(crate) struct RelayArgs {
    /// The Unix socket cordon listens on, bound into the jail.
    #[arg(long)]
    pub(crate) socket: PathBuf,
    /// The Unix socket the activity log's listener is handed to (none: no activity log).
    #[arg(long)]
    pub(crate) activity: Option<PathBuf>,
    /// Where the command finds the proxy inside the jail.
    #[arg(long)]
    pub(crate) listen: std::net::SocketAddr,
    /// The command and its arguments, after `--`.
    #[arg(last = true)]
    pub(crate) command: Vec<String>,
}

/// Run `cordon jail-relay`; the exit code is the command's.
pub(crate) fn relay(args: RelayArgs, child_signals: jail::ChildSignals) -> ExitCode {
    match jail::relay::run(args.socket, args.activity, args.listen, &args.command, child_signals) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            eprintln!("cordon jail: {e}");
            ExitCode::from(125)
        }
    }
}

/// Arguments of `cordon jail-activity` (inside the root jail; not for people).
#[derive(clap::Args)]
pub(crate) struct ActivityArgs {
    /// The Unix socket cordon's activity recorder listens on, bound into the jail.
    #[arg(long)]
    pub(crate) socket: PathBuf,
    /// The command and its arguments, after `--`.
    #[arg(last = true)]
    pub(crate) command: Vec<String>,
}

/// Run `cordon jail-activity`: it becomes the command, under the activity filter (or exits 125 when it cannot).
pub(crate) fn activity(args: ActivityArgs) -> ExitCode {
    use std::os::unix::process::CommandExt;
    let Some((program, rest)) = args.command.split_first() else {
        eprintln!("cordon jail-activity: no command given");
        return ExitCode::from(125);
    };
    if let Err(e) = jail::activity::arm(&args.socket) {
        eprintln!("cordon jail: {e}");
        return ExitCode::from(125);
    }
    let e = std::process::Command::new(program).args(rest).exec();
    eprintln!("cordon jail: cannot start {program}: {e}");
    ExitCode::from(127)
}
