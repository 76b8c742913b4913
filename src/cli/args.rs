//! What several commands take: the configuration file, loaded with every error printed.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::Config;
use crate::logging::Stderr;

/// The configuration file a command reads.
#[derive(clap::Args)]
pub(crate) struct ConfigArg {
    /// Configuration file (default: the embedded config/cordon.yaml). Also read from CORDON_CONFIG.
    #[arg(long, env = "CORDON_CONFIG")]
    pub(crate) config: Option<PathBuf>,
}

/// Load the configuration `arg` names; on errors, print them all and give the exit code.
/// Warnings (what is accepted but probably not meant) go to standard error.
pub(crate) fn load(arg: &ConfigArg) -> Result<Config, ExitCode> {
    load_as(arg, Stderr::text()).map(|(config, _)| config)
}

/// [`load`], with the errors and warnings written as `out` says; then the lines as the loaded configuration's
/// `log.format` says (unless `CORDON_LOG_FORMAT` chose).
pub(crate) fn load_as(arg: &ConfigArg, out: Stderr) -> Result<(Config, Stderr), ExitCode> {
    let config = Config::load(arg.config.as_deref()).map_err(|errors| {
        out.config_errors(&errors, "nothing was started");
        ExitCode::from(2)
    })?;
    let out = out.configured(config.log_format);
    for w in &config.warnings {
        out.warn(w);
    }
    Ok((config, out))
}

/// How cordon's own lines on standard error are written for a command reading the configuration `arg` names
/// (`cordon run`, `cordon check`); a `CORDON_LOG_FORMAT` that is not a format is an error, exit code 2.
pub(crate) fn stderr_for(arg: &ConfigArg) -> Result<Stderr, ExitCode> {
    Stderr::choose(arg.config.as_deref()).map_err(|e| {
        eprintln!("cordon: {e}");
        ExitCode::from(2)
    })
}
