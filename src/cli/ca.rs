//! `cordon ca export|rotate --sandbox ID`: a declared sandbox's CA, created on first need.

use std::process::ExitCode;

use clap::Subcommand;

use super::args::{ConfigArg, load};
use crate::tls::ca::{CaStore, Scope};
use crate::tls::cas::scope_for;

#[derive(Subcommand)]
pub(super) enum CaCommand {
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

/// Run a `ca` command.
pub(crate) fn main(command: CaCommand) -> ExitCode {
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
            out!("{}", ca.cert_pem());
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
