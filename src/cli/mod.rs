//! The `cordon` command line: every command, parsed by clap and run on the library. `main.rs` only calls
//! [`main`].

/// `println!` to standard output, without a panic when the reader has gone (see [`output`]).
macro_rules! outln {
    ($($arg:tt)*) => { $crate::cli::output::write(format_args!($($arg)*), true) };
}

/// `print!` to standard output, without a panic when the reader has gone (see [`output`]).
macro_rules! out {
    ($($arg:tt)*) => { $crate::cli::output::write(format_args!($($arg)*), false) };
}

pub mod admin_client;
pub(crate) mod approvals;
mod args;
mod audit;
mod ca;
mod check;
mod check_json;
mod config_cmd;
mod credentials;
mod docs;
mod examples;
mod explain;
pub(crate) mod jail;
mod output;
mod policy;
mod reasons;
mod render;
pub(crate) mod run;
pub(crate) mod sandbox;
mod style;
mod suggest;
mod vault;

use std::io::Read;
use std::process::ExitCode;

use clap::{FromArgMatches, Parser, Subcommand};

use crate::identity;
pub(crate) use args::ConfigArg;
use args::{load, load_startable};

#[derive(Parser)]
#[command(
    name = "cordon",
    version = crate::version::LONG,
    about = "A default-deny egress proxy for AI-agent sandboxes"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the proxy (the default when no command is given).
    ///
    /// Operational logs go to stderr: CORDON_LOG sets the level, CORDON_LOG_FORMAT=text|json the format (over
    /// the configuration's log.format, and for its errors too).
    Run(ConfigArg),
    /// Validate a configuration and what a start would refuse (folders, the audit file, every secret from a
    /// local source), print a summary; exit 2 listing every error. No network unless --probe.
    Check(check::CheckArgs),
    /// The configuration file's JSON Schema, for editors and CI: `cordon config schema > cordon.schema.json`.
    Config {
        #[command(subcommand)]
        command: config_cmd::ConfigCommand,
    },
    /// Say what cordon would do with a request from a sandbox, and why.
    Explain {
        #[command(flatten)]
        config: ConfigArg,
        /// The sandbox id.
        #[arg(long)]
        sandbox: String,
        /// The request method, as the client sends it: methods are case-sensitive (`get` is not GET).
        #[arg(long, default_value = "GET")]
        method: String,
        /// Print the answer as JSON: each exchange (CONNECT, request) with the decision, reason, rule,
        /// status and credentials its audit record would carry.
        #[arg(long)]
        json: bool,
        /// The URL, e.g. http://example.com/ or https://api.github.com/repos/acme/x.
        url: String,
    },
    /// Policies: `diff OLD NEW` (what a change adds), `contains BOUNDARY CANDIDATE` (a proof, or a request that
    /// refutes it), `suggest FILE...` (learn one from an audit log).
    Policy {
        #[command(subcommand)]
        command: policy::PolicyCommand,
    },
    /// The audit log: the checkpoints' public key, and verifying audit files.
    Audit {
        #[command(subcommand)]
        command: audit::AuditCommand,
    },
    /// Per-sandbox certificate authorities.
    Ca {
        #[command(subcommand)]
        command: ca::CaCommand,
    },
    /// The file vault: `set NAME` (value on stdin), `list` (names only), `rm NAME`.
    Vault {
        #[command(subcommand)]
        command: vault::VaultCommand,
    },
    /// Print the placeholders a sandbox may use, as environment variables (CORDON_PLACEHOLDER_<NAME>).
    Placeholders {
        #[command(flatten)]
        config: ConfigArg,
        /// The sandbox id.
        #[arg(long)]
        sandbox: String,
        /// Print them as one JSON object, {"CORDON_PLACEHOLDER_<NAME>": "value", ...}.
        #[arg(long)]
        json: bool,
    },
    /// Run a command whose only way out is cordon (Linux, bubblewrap): in a network namespace as root, or with
    /// --project as you, without root.
    Jail(jail::JailArgs),
    /// Inside a jail without root: relay the proxy's address to cordon and run the command (used by `cordon
    /// jail --project`).
    #[command(hide = true)]
    JailRelay(jail::RelayArgs),
    /// Inside the root jail: put the command under the activity log's filter, hand its listener to cordon, and
    /// become the command (used by `cordon jail`).
    #[command(hide = true)]
    JailActivity(jail::ActivityArgs),
    /// Run-time sandboxes, through the admin API of a running cordon.
    Sandbox {
        #[command(flatten)]
        admin: sandbox::AdminArgs,
        #[command(subcommand)]
        command: sandbox::SandboxCommand,
    },
    /// Requests held for a human (policy rules with `action: ask`) and standing grants, through the admin API.
    Approvals {
        #[command(flatten)]
        admin: sandbox::AdminArgs,
        #[command(subcommand)]
        command: approvals::ApprovalsCommand,
    },
    /// Sign-ins cordon holds (`oauth2_refresh` credentials): seed a refresh token, through the admin API.
    Credentials {
        #[command(flatten)]
        admin: sandbox::AdminArgs,
        #[command(subcommand)]
        command: credentials::CredentialsCommand,
    },
    /// What a reason code (`x-cordon-reason`, an audit record's `reason`) means and how the sandbox was
    /// answered; every code without one.
    Reasons {
        /// A reason code, e.g. `no_rule`.
        code: Option<String>,
        /// Print JSON: {"reasons": [{"code", "answer", "status", "meaning"}, ...]}, or that one object for a CODE.
        #[arg(long, conflicts_with = "markdown")]
        json: bool,
        /// Print the table as Markdown (as the Troubleshooting page has it), not aligned columns.
        #[arg(long)]
        markdown: bool,
    },
    /// Print a completion script for a shell: `cordon completions bash > /etc/bash_completion.d/cordon` (zsh: a
    /// file `_cordon` on $fpath; fish: ~/.config/fish/completions/cordon.fish).
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff) of cordon or of one of its commands: `cordon man | man -l -`, or `cordon man
    /// sandbox > cordon-sandbox.1`.
    Man {
        /// The command (and subcommand) whose page to print, e.g. `sandbox create`; none: cordon's own page.
        command: Vec<String>,
    },
    /// Token helpers.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Read a token on stdin and print the `token_sha256` to put in the config.
    Hash,
}

/// The command line's definition, with every command's examples after its help: what is parsed, and what
/// `--help`, the completion scripts and the manual pages show.
fn definition() -> clap::Command {
    examples::attach(<Cli as clap::CommandFactory>::command())
}

/// Parse the command line and run the command; the exit code says how it went. `on_idle` is the binary's
/// allocator handing back memory it no longer uses: `cordon run` calls it on a worker thread about to park
/// (nothing left to run), at most once a second per worker. `child_signals` is the binary's way to start a jail's
/// first process with default signal dispositions and an empty signal mask ([`crate::jail::ChildSignals`]).
pub fn main(on_idle: fn(), child_signals: crate::jail::ChildSignals) -> ExitCode {
    let cli = Cli::from_arg_matches(&definition().get_matches()).unwrap_or_else(|e| e.format(&mut definition()).exit());
    // Plain `cordon` is `cordon run`, CORDON_CONFIG included (clap reads it only for a subcommand it parsed).
    let command = cli.command.unwrap_or_else(|| {
        Command::Run(ConfigArg {
            config: std::env::var_os("CORDON_CONFIG")
                .filter(|v| !v.is_empty())
                .map(std::path::PathBuf::from),
        })
    });
    match command {
        Command::Run(arg) => {
            let loaded = load_startable(&arg);
            match loaded {
                Ok((config, out)) => run::run(config, arg.config.clone(), on_idle, out),
                Err(code) => code,
            }
        }
        Command::JailRelay(args) => jail::relay(args, child_signals),
        Command::JailActivity(args) => jail::activity(args),
        Command::Jail(args) => match load(&ConfigArg {
            config: args.config.clone(),
        }) {
            Ok(config) => jail::main(config, args, child_signals),
            Err(code) => code,
        },
        Command::Sandbox { admin, command } => sandbox::main(admin, command),
        Command::Approvals { admin, command } => approvals::main(admin, command),
        Command::Credentials { admin, command } => credentials::main(admin, command),
        Command::Check(args) => match load_startable(&args.config) {
            Ok((config, err)) => check::main(&config, &args, err),
            Err(code) => code,
        },
        Command::Explain {
            config,
            sandbox,
            method,
            json,
            url,
        } => explain::main(&config, &sandbox, &method, &url, json),
        Command::Ca { command } => ca::main(command),
        Command::Config { command } => config_cmd::main(command),
        Command::Audit { command } => audit::main(command),
        Command::Policy { command } => policy::main(command),
        Command::Placeholders { config, sandbox, json } => vault::placeholders(&config, &sandbox, json),
        Command::Vault { command } => vault::main(command),
        Command::Reasons { code, json, markdown } => reasons::main(code.as_deref(), json, markdown),
        Command::Completions { shell } => docs::completions(definition(), shell),
        Command::Man { command } => docs::man(definition(), &command),
        Command::Token {
            command: TokenCommand::Hash,
        } => {
            let mut token = String::new();
            if let Err(e) = std::io::stdin().read_to_string(&mut token) {
                eprintln!("cordon: cannot read the token from stdin: {e}");
                return ExitCode::from(2);
            }
            let token = token.trim_end_matches(['\r', '\n']);
            if token.is_empty() {
                eprintln!("cordon: no token on stdin (e.g. `openssl rand -hex 24 | cordon token hash`)");
                return ExitCode::from(2);
            }
            outln!("{}", identity::hash_token(token));
            ExitCode::SUCCESS
        }
    }
}
