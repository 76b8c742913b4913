//! `cordon ca export|rotate --sandbox ID`: a declared sandbox's CA, created on first need.

use std::process::ExitCode;

use clap::Subcommand;

use super::args::{ConfigArg, load};
use crate::names::SandboxId;
use crate::tls::ca::scope_for;
use crate::tls::ca::{CaStore, Scope};

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
        // Not declared: a sandbox created at run time, whose CA the running cordon's admin API exports or rotates.
        if config.listen.admin.is_some() {
            return through_admin(arg.config.clone(), sandbox, rotate);
        }
        let ids: Vec<&str> = config.sandboxes.iter().map(|s| s.id.as_str()).collect();
        eprintln!(
            "cordon: no sandbox {sandbox:?} in {}; the sandboxes are: {} (a sandbox created at run time is reached              through the admin API, which this configuration does not have: listen.admin)",
            config.source,
            ids.join(", ")
        );
        return ExitCode::from(2);
    };
    let scope = config
        .policies
        .get(&spec.policy)
        .map(|p| scope_for(p))
        .unwrap_or(Scope::Unconstrained);
    let result = if config.control.postgres.is_some() {
        in_database(&config, &spec.id, &scope, rotate)
    } else {
        let store = CaStore::new(config.ca.dir.clone()).with_rotate_command(config.rotate_command());
        if rotate {
            store.rotate(&spec.id, &scope)
        } else {
            store.load_or_create(&spec.id, &scope)
        }
        .map_err(|e| e.to_string())
    };
    match result {
        Ok(ca) => {
            out!("{}", ca.cert_pem());
            if rotate && config.control.postgres.is_some() {
                eprintln!(
                    "cordon: a new CA was issued for sandbox {sandbox:?}; every running replica uses it at once; give it to the sandbox"
                );
            } else if rotate {
                eprintln!(
                    "cordon: a new CA was issued for sandbox {sandbox:?}; give it to the sandbox (a running cordon uses it from its next reload or restart)"
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

/// Export or rotate a CA kept in PostgreSQL (`control.store: postgres://…`): a rotation is announced, so every
/// running replica uses the new CA at once.
fn in_database(
    config: &crate::config::Config,
    sandbox: &SandboxId,
    scope: &Scope,
    rotate: bool,
) -> Result<std::sync::Arc<crate::tls::ca::SandboxCa>, String> {
    let Some(pg) = &config.control.postgres else {
        return Err("the store is not PostgreSQL".into());
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async {
        let secrets = crate::secrets::Secrets::new(config)?;
        let (db, sealer) = crate::replica::connect(pg, &secrets).await?;
        let cas = crate::tls::ca::SharedCas::new(db, sealer);
        if rotate {
            cas.rotate(sandbox, scope).await
        } else {
            cas.ensure(sandbox, scope).await
        }
        .map_err(|e| e.to_string())
    })
}

/// Export or rotate the CA of a run-time sandbox through the running cordon's admin API.
fn through_admin(config: Option<std::path::PathBuf>, sandbox: String, rotate: bool) -> ExitCode {
    let args = crate::cli::sandbox::AdminArgs::of_config(config);
    crate::cli::sandbox::over_admin(&args, |client| async move {
        let answer = if rotate {
            client.rotate_ca(&sandbox).await?
        } else {
            client.show(&sandbox).await?
        };
        if rotate {
            eprintln!("cordon: a new CA was issued for sandbox {sandbox:?} and is in use; give it to the sandbox");
        }
        Ok(answer["ca_certificate"].as_str().unwrap_or_default().to_owned())
    })
}
