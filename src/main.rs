//! The `cordon` command line.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use cordon::config::Config;
use cordon::state::scope_for;
use cordon::tls::ca::{CaStore, Scope};
use cordon::{explain, identity};

mod cli;

/// mimalloc rather than glibc's malloc: hyper takes a fresh 8 KiB read buffer for most messages (the last one is
/// still shared with the parsed head), and glibc serves those from its slow bins, consolidating as it goes.
/// HTTP forward: 13% less CPU per request; intercept 7%; at 60 KiB instead of 49 KiB per idle intercepted
/// connection (BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "cordon",
    version,
    about = "A default-deny egress proxy for AI-agent sandboxes"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the proxy (the default when no command is given).
    Run(ConfigArg),
    /// Validate a configuration and print a summary; exit 2 listing every error.
    Check(ConfigArg),
    /// Say what cordon would do with a request from a sandbox, and why.
    Explain {
        #[command(flatten)]
        config: ConfigArg,
        /// The sandbox id.
        #[arg(long)]
        sandbox: String,
        /// The request method.
        #[arg(long, default_value = "GET")]
        method: String,
        /// The URL, e.g. http://example.com/ or https://api.github.com/repos/acme/x.
        url: String,
    },
    /// Per-sandbox certificate authorities.
    Ca {
        #[command(subcommand)]
        command: CaCommand,
    },
    /// The file vault: `set NAME` (value on stdin), `list` (names only), `rm NAME`.
    Vault {
        #[command(subcommand)]
        command: VaultCommand,
    },
    /// Print the placeholders a sandbox may use, as environment variables (CORDON_PLACEHOLDER_<NAME>).
    Placeholders {
        #[command(flatten)]
        config: ConfigArg,
        /// The sandbox id.
        #[arg(long)]
        sandbox: String,
    },
    /// Run a command in a network namespace whose only way out is cordon (Linux, root).
    Jail(cli::jail::JailArgs),
    /// Run-time sandboxes, through the admin API of a running cordon.
    Sandbox {
        #[command(flatten)]
        admin: cli::sandbox::AdminArgs,
        #[command(subcommand)]
        command: cli::sandbox::SandboxCommand,
    },
    /// Requests held for a human (policy rules with `action: ask`) and standing grants, through the admin API.
    Approvals {
        #[command(flatten)]
        admin: cli::sandbox::AdminArgs,
        #[command(subcommand)]
        command: cli::approvals::ApprovalsCommand,
    },
    /// Token helpers.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
}

#[derive(Subcommand)]
enum CaCommand {
    /// Print the sandbox's CA certificate (PEM), creating the CA if it does not exist yet.
    Export {
        #[command(flatten)]
        config: ConfigArg,
        /// The sandbox id.
        #[arg(long)]
        sandbox: String,
    },
    /// Replace the sandbox's CA with a new one (re-issued for the names its policy allows now) and print it.
    Rotate {
        #[command(flatten)]
        config: ConfigArg,
        /// The sandbox id.
        #[arg(long)]
        sandbox: String,
    },
}

#[derive(Subcommand)]
enum VaultCommand {
    /// Store a secret read from stdin (never from the command line, where it would be visible in `ps`).
    Set {
        #[command(flatten)]
        config: ConfigArg,
        /// The secret's name.
        name: String,
    },
    /// Print the names of the stored secrets (never their values).
    List {
        #[command(flatten)]
        config: ConfigArg,
    },
    /// Remove a secret.
    Rm {
        #[command(flatten)]
        config: ConfigArg,
        /// The secret's name.
        name: String,
    },
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Read a token on stdin and print the `token_sha256` to put in the config.
    Hash,
}

#[derive(clap::Args, Default)]
struct ConfigArg {
    /// Configuration file (default: the embedded config/cordon.yaml). Also read from CORDON_CONFIG.
    #[arg(long, env = "CORDON_CONFIG")]
    config: Option<PathBuf>,
}

fn load(arg: &ConfigArg) -> Result<Config, ExitCode> {
    Config::load(arg.config.as_deref()).map_err(|errors| {
        eprintln!("{errors}");
        eprintln!("cordon: {} error(s); nothing was started", errors.0.len());
        ExitCode::from(2)
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command.unwrap_or(Command::Run(ConfigArg::default())) {
        Command::Run(arg) => match load(&arg) {
            Ok(config) => cli::run::run(config, arg.config.clone()),
            Err(code) => code,
        },
        Command::Jail(args) => match load(&ConfigArg {
            config: args.config.clone(),
        }) {
            Ok(config) => cli::jail::main(config, args),
            Err(code) => code,
        },
        Command::Sandbox { admin, command } => cli::sandbox::main(admin, command),
        Command::Approvals { admin, command } => cli::approvals::main(admin, command),
        Command::Check(arg) => match load(&arg) {
            Ok(config) => {
                print_summary(&config);
                ExitCode::SUCCESS
            }
            Err(code) => code,
        },
        Command::Explain {
            config,
            sandbox,
            method,
            url,
        } => {
            let config = match load(&config) {
                Ok(c) => c,
                Err(code) => return code,
            };
            let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("cordon: cannot start the runtime: {e}");
                    return ExitCode::FAILURE;
                }
            };
            match rt.block_on(explain::explain(&config, &sandbox, &method, &url)) {
                Ok(e) => {
                    print!("{}", e.text);
                    if e.allowed {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::from(1)
                    }
                }
                Err(msg) => {
                    eprintln!("cordon: {msg}");
                    ExitCode::from(2)
                }
            }
        }
        Command::Ca { command } => ca(command),
        Command::Placeholders { config, sandbox } => placeholders(&config, &sandbox),
        Command::Vault { command } => vault(command),
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
            println!("{}", identity::hash_token(token));
            ExitCode::SUCCESS
        }
    }
}

fn ca(command: CaCommand) -> ExitCode {
    let (arg, sandbox, rotate) = match command {
        CaCommand::Export { config, sandbox } => (config, sandbox, false),
        CaCommand::Rotate { config, sandbox } => (config, sandbox, true),
    };
    let config = match load(&arg) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let Some(spec) = config.sandbox(&sandbox) else {
        let ids: Vec<&str> = config.sandboxes.iter().map(|s| s.id.as_str()).collect();
        eprintln!(
            "cordon: no sandbox {sandbox:?} in {}; the sandboxes are: {}",
            config.source,
            ids.join(", ")
        );
        return ExitCode::from(2);
    };
    let scope = config
        .policies
        .get(&spec.policy)
        .map(scope_for)
        .unwrap_or(Scope::Unconstrained);
    let store = CaStore::new(config.ca.dir.clone());
    let result = if rotate {
        store.rotate(&sandbox, &scope)
    } else {
        store.load_or_create(&sandbox, &scope)
    };
    match result {
        Ok(ca) => {
            print!("{}", ca.cert_pem());
            if rotate {
                eprintln!(
                    "cordon: a new CA was issued for sandbox {sandbox:?}; give it to the sandbox (a running cordon picks it up on restart)"
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("cordon: {e}");
            ExitCode::FAILURE
        }
    }
}

fn vault(command: VaultCommand) -> ExitCode {
    let arg = match &command {
        VaultCommand::Set { config, .. } | VaultCommand::List { config } | VaultCommand::Rm { config, .. } => config,
    };
    let config = match load(arg) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let vault = match cordon::credentials::secrets::open_vault(&config.vault) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("cordon: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = match &command {
        VaultCommand::Set { name, .. } => {
            let mut value = String::new();
            if let Err(e) = std::io::stdin().read_to_string(&mut value) {
                eprintln!("cordon: cannot read the value from stdin: {e}");
                return ExitCode::from(2);
            }
            let value = value.trim_end_matches(['\r', '\n']).to_string();
            if value.is_empty() {
                eprintln!("cordon: no value on stdin (e.g. `printf %s \"$TOKEN\" | cordon vault set {name}`)");
                return ExitCode::from(2);
            }
            vault
                .set(name, value.into())
                .map(|()| eprintln!("cordon: stored {name:?}"))
        }
        VaultCommand::List { .. } => vault.list().map(|names| names.iter().for_each(|n| println!("{n}"))),
        VaultCommand::Rm { name, .. } => vault.remove(name).map(|found| {
            if !found {
                eprintln!("cordon: {name:?} was not in the vault");
            }
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cordon: {e}");
            ExitCode::FAILURE
        }
    }
}

fn placeholders(arg: &ConfigArg, sandbox: &str) -> ExitCode {
    let config = match load(arg) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let Some(spec) = config.sandbox(sandbox) else {
        eprintln!("cordon: no sandbox {sandbox:?} in {}", config.source);
        return ExitCode::from(2);
    };
    let allowed = config
        .policies
        .get(&spec.policy)
        .map(|p| p.credentials.clone())
        .unwrap_or_default();
    let creds = match cordon::credentials::apply::Credentials::new(&config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cordon: {e}");
            return ExitCode::FAILURE;
        }
    };
    for (name, value) in creds.placeholders_for(sandbox, &allowed) {
        println!("{}={value}", cordon::credentials::placeholder::env_var(&name));
    }
    ExitCode::SUCCESS
}

fn print_summary(c: &Config) {
    println!("{}: ok", c.source);
    match c.listen.admin {
        Some(admin) => println!("listen   proxy {}, admin {admin}", c.listen.proxy),
        None => println!("listen   proxy {} (no admin API)", c.listen.proxy),
    }
    if let Some(t) = c.listen.transparent {
        let how = if c.listen.transparent_tproxy {
            "TPROXY"
        } else {
            "REDIRECT"
        };
        println!("         transparent {t} ({how})");
    }
    if let Some(d) = c.listen.dns {
        println!("         dns {d} (UDP and TCP)");
    }
    let store = c
        .control
        .store
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "in memory".into());
    println!(
        "control  store {store}, sandbox lifetime {} (at most {})",
        humantime::format_duration(c.control.default_ttl),
        humantime::format_duration(c.control.max_ttl)
    );
    let rate = |r: Option<cordon::limits::Rate>| {
        r.map(|r| format!("{}/s burst {}", r.per_second, r.burst))
            .unwrap_or_else(|| "unlimited".into())
    };
    let l = &c.limits.rates;
    println!(
        "limits   per sandbox {} requests, {} open; per user {} requests; budgets {}",
        rate(l.sandbox_requests),
        l.sandbox_open
            .map(|n| n.to_string())
            .unwrap_or_else(|| "unlimited".into()),
        rate(l.user_requests),
        if l.sandbox_upload.is_some() || l.sandbox_download.is_some() {
            "on"
        } else {
            "off"
        }
    );
    let audit = match &c.audit {
        cordon::config::AuditConfig::Stdout => "stdout".to_string(),
        cordon::config::AuditConfig::File(p) => p.display().to_string(),
    };
    println!("audit    {audit}");
    println!(
        "network  {} allowed CIDRs, {} dangerous metadata exceptions, {} host overrides",
        c.network.allow_cidrs.len(),
        c.network.dangerous_allow_metadata.len(),
        c.network.hosts.len()
    );
    println!("sandboxes {}", c.sandboxes.len());
    for s in &c.sandboxes {
        let how = match (s.token_sha256.is_some(), s.source_cidrs.is_empty()) {
            (true, true) => "token".to_string(),
            (true, false) => format!("token or source {:?}", s.source_cidrs),
            (false, _) => format!("source {:?}", s.source_cidrs),
        };
        println!("  {:<16} user {:<16} policy {:<12} by {how}", s.id, s.user, s.policy);
    }
    println!("policies {}", c.policies.len());
    for (name, p) in &c.policies {
        println!("  {:<16} {:<8} {} rules", name, p.mode.as_str(), p.rule_count());
    }
}
