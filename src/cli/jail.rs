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
    /// Leave `.git/config` and `.git/hooks` of the writable folder writable (by default they are read-only
    /// inside: git runs what they say on the host).
    #[arg(long)]
    pub(crate) writable_git: bool,
    /// Remove what an earlier jail for the sandbox left (after a crash), then exit.
    #[arg(long)]
    pub(crate) cleanup: bool,
    /// The command and its arguments, after `--`.
    #[arg(last = true)]
    pub(crate) command: Vec<String>,
}

/// Run `cordon jail`; the exit code is the command's.
pub(crate) fn main(config: Config, args: JailArgs) -> ExitCode {
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
    };
    match jail::run(config, options) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            eprintln!("cordon jail: {e}");
            ExitCode::from(125)
        }
    }
}

/// Arguments of `cordon jail-relay` (inside a jail without root; not for people).
#[derive(clap::Args)]
pub(crate) struct RelayArgs {
    /// The Unix socket cordon listens on, bound into the jail.
    #[arg(long)]
    pub(crate) socket: PathBuf,
    /// Where the command finds the proxy inside the jail.
    #[arg(long)]
    pub(crate) listen: std::net::SocketAddr,
    /// The command and its arguments, after `--`.
    #[arg(last = true)]
    pub(crate) command: Vec<String>,
}

/// Run `cordon jail-relay`; the exit code is the command's.
pub(crate) fn relay(args: RelayArgs) -> ExitCode {
    match jail::relay::run(args.socket, args.listen, &args.command) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            eprintln!("cordon jail: {e}");
            ExitCode::from(125)
        }
    }
}
