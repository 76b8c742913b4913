//! What several commands take: the configuration file, loaded with every error printed.

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
