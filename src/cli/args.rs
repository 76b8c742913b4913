//! What several commands take: the configuration file, loaded with every error printed (and, for the commands
//! that start cordon or vouch that it would start, with what a start would refuse).

use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::Config;

/// The configuration file a command reads.
#[derive(clap::Args, Default)]
pub(crate) struct ConfigArg {
    /// Configuration file (default: the embedded config/cordon.yaml). Also read from CORDON_CONFIG.
    #[arg(long, env = "CORDON_CONFIG")]
    pub(crate) config: Option<PathBuf>,
}

/// Load the configuration `arg` names; on errors, print them all and give the exit code.
/// Warnings (what is accepted but probably not meant) go to standard error.
pub(crate) fn load(arg: &ConfigArg) -> Result<Config, ExitCode> {
    let config = Config::load(arg.config.as_deref()).map_err(|errors| {
        eprintln!("{errors}");
        eprintln!("cordon: {} error(s); nothing was started", errors.0.len());
        ExitCode::from(2)
    })?;
    for w in &config.warnings {
        eprintln!("warning: {w}");
    }
    Ok(config)
}

/// [`load`], then what a start would refuse ([`crate::preflight`]): `cordon run` and `cordon check` take the
/// same path, so `check` passes exactly what `run` would start with. Problems are printed like
/// configuration errors, and give exit code 2.
pub(crate) fn load_startable(arg: &ConfigArg) -> Result<Config, ExitCode> {
    let config = load(arg)?;
    let problems = crate::preflight::problems(&config);
    if problems.is_empty() {
        return Ok(config);
    }
    for p in &problems {
        eprintln!("{}: {p}", config.source);
    }
    eprintln!("cordon: {} error(s); nothing was started", problems.len());
    Err(ExitCode::from(2))
}
