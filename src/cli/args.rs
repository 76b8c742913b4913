//! What several commands take: the configuration file, loaded with every error printed (and, for the commands
//! that start cordon or vouch that it would start, with what a start would refuse).

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

/// [`load`], then what a start would refuse ([`crate::preflight`]): `cordon run` and `cordon check` take the
/// same path, so `check` passes exactly what `run` would start with. Problems are printed like
/// configuration errors, and give exit code 2.
pub(crate) fn load_startable(arg: &ConfigArg) -> Result<(Config, Stderr), ExitCode> {
    let (config, out) = load_as(arg, stderr_for(arg)?)?;
    let problems = crate::preflight::problems(&config);
    if problems.is_empty() {
        return Ok((config, out));
    }
    for p in &problems {
        out.error_in_file(&format!("{}: {p}", config.source));
    }
    out.error(&format!("{} error(s); nothing was started", problems.len()));
    Err(ExitCode::from(2))
}
