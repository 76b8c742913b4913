//! `cordon vault set|list|rm` (the file vault) and `cordon placeholders --sandbox ID`.

use std::io::Read;
use std::process::ExitCode;

use clap::Subcommand;

use super::args::{ConfigArg, load};

#[derive(Subcommand)]
pub(super) enum VaultCommand {
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
        /// Print JSON: {"secrets": ["NAME", ...]}, sorted.
        #[arg(long)]
        json: bool,
    },
    /// Remove a secret.
    Rm {
        #[command(flatten)]
        config: ConfigArg,
        /// The secret's name.
        name: String,
    },
}

/// Run a `vault` command.
pub(crate) fn main(command: VaultCommand) -> ExitCode {
    let arg = match &command {
        VaultCommand::Set { config, .. } | VaultCommand::List { config, .. } | VaultCommand::Rm { config, .. } => {
            config
        }
    };
    let config = match load(arg) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let vault = match crate::secrets::open_vault(&config.vault) {
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
                let set = config.command(&format!("vault set {}", shlex::try_quote(name).unwrap_or_default()));
                eprintln!("cordon: no value on stdin (e.g. `printf %s \"$TOKEN\" | ({set})`)");
                return ExitCode::from(2);
            }
            vault
                .set(name, value.into())
                .map(|()| eprintln!("cordon: stored {name:?}"))
        }
        VaultCommand::List { json: false, .. } => vault.list().map(|names| names.iter().for_each(|n| outln!("{n}"))),
        VaultCommand::List { json: true, .. } => vault.list().map(|names| {
            let mut names: Vec<&String> = names.iter().collect();
            names.sort();
            out!("{}", super::sandbox::pretty(&serde_json::json!({ "secrets": names })));
        }),
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

/// Print a sandbox's placeholders as environment variables (`NAME=value` lines, or one JSON object).
/// `sandbox` is the command line's text: it names a declared sandbox or none.
pub(crate) fn placeholders(arg: &ConfigArg, sandbox: &str, json: bool) -> ExitCode {
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
    let creds = match crate::inject::apply::Credentials::new(&config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cordon: {e}");
            return ExitCode::FAILURE;
        }
    };
    let incarnation = crate::names::Incarnation::declared(&spec.id, &spec.user);
    let vars: Vec<(String, String)> = creds
        .placeholders_for(&incarnation, &allowed)
        .into_iter()
        .map(|(name, value)| (crate::placeholder::env_var(name.as_str()), value))
        .chain(creds.aws_env(&incarnation, &allowed))
        .collect();
    if json {
        let object: serde_json::Map<String, serde_json::Value> =
            vars.into_iter().map(|(var, value)| (var, value.into())).collect();
        out!("{}", super::sandbox::pretty(&serde_json::Value::Object(object)));
    } else {
        for (var, value) in vars {
            outln!("{var}={value}");
        }
    }
    ExitCode::SUCCESS
}
