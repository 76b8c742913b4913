//! Configuration: YAML in, typed and validated `Config` out.
//!
//! One file per section of the file (`listen.rs`, `audit.rs`, `policies.rs`, ...; `credentials/` by concern),
//! each with the section as written (`Raw*`, serde's mirror: every key a user may write, unknown keys are
//! errors), as validated, and the validation between them, which names the path of every offending value.
//! `assemble.rs` holds the whole file (`RawConfig`, `Config`) and builds one from the other section by section.
//! Shared by all: `scalars.rs` (numbers and switches as written), `shapes.rs` (what the JSON Schema says of values
//! kept as text), `fields.rs` (readers of addresses, durations, sizes...), `errors.rs` (errors with their
//! path), `lint.rs` (what `check` warns about), `schema.rs` (`cordon config schema`) and `paths.rs`. This is the
//! only module that knows YAML (serde_yaml_ng, the maintained fork of the deprecated serde_yaml, with the same
//! serde model).

pub(crate) mod access;
mod admin;
mod approval;
mod assemble;
mod audit;
pub(crate) mod boundary;
mod ca;
pub(crate) mod console;
mod control;
pub(crate) mod credentials;
mod errors;
mod export;
mod fields;
mod inline;
pub(crate) mod jail;
mod limits;
mod lint;
mod listen;
mod log;
mod model_api;
mod network;
pub(crate) mod paths;
mod policies;
pub(crate) mod previews;
pub(crate) mod principals;
mod sandboxes;
mod scalars;
pub(crate) mod schema;
mod shapes;
mod timeouts;
mod upstream;
pub(crate) mod violations;

use std::path::Path;

use crate::identity::SandboxSpec;
pub(crate) use approval::ApprovalConfig;
pub use assemble::Config;
pub(crate) use audit::{AuditChain, AuditConfig};
pub use ca::CaConfig;
pub(crate) use control::PostgresConfig;
pub(crate) use credentials::minting;
pub use errors::{ConfigError, ConfigErrors};
pub(crate) use export::OtlpExport;
pub(crate) use inline::inline_policy;
pub use limits::default_rates;
pub(crate) use listen::Listener;
pub use log::LogFormat;

/// The embedded default configuration (`config/cordon.yaml`), used when no `--config` is given.
pub(crate) const EMBEDDED: &str = include_str!("../../config/cordon.yaml");

/// The name errors use for the embedded configuration.
pub(crate) const EMBEDDED_NAME: &str = "config/cordon.yaml (embedded)";

/// What an empty configuration file should say instead, in the refusal at start and at reload.
pub(crate) const BLANK_HINT: &str = "a file with no sandboxes and no policies must say so, e.g. `sandboxes: []`";

/// Whether a configuration file's `text` holds nothing at all (no bytes, or only white space and comments).
/// SECURITY: such a file is most likely one caught half-written (an editor mid-save, a truncated ConfigMap);
/// read as a configuration it would be one of nothing at all, so start ([`Config::load`]) and reload refuse
/// it alike.
pub(crate) fn is_blank(text: &str) -> bool {
    text.lines()
        .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
}

impl Config {
    /// Parse and validate YAML text; `source` names it in errors. Relative paths stay as written (relative to
    /// the working folder): a configuration read from a file is [`Config::load`]'s, which reads them against
    /// the file's folder.
    pub fn parse(source: &str, text: &str) -> Result<Config, ConfigErrors> {
        Config::parse_at(source, text, paths::Base::AsWritten)
    }

    /// [`Config::parse`], reading relative paths against `base`.
    pub(crate) fn parse_at(source: &str, text: &str, base: paths::Base) -> Result<Config, ConfigErrors> {
        let raw: assemble::RawConfig = if is_blank(text) {
            assemble::RawConfig::default()
        } else {
            serde_yaml_ng::from_str(text).map_err(|e| {
                ConfigErrors(vec![ConfigError {
                    file: source.to_string(),
                    location: e.location().map(|l| (l.line(), l.column())),
                    path: String::new(),
                    message: strip_location(&e.to_string()),
                }])
            })?
        };
        assemble::validate(source, base, raw)
    }

    /// Load from a file, or the embedded default when `path` is `None`. A file that holds nothing
    /// ([`is_blank`]) is refused. Relative paths are read against the file's folder, or the state folder
    /// ([`paths::state_dir`]) for the embedded configuration.
    pub fn load(path: Option<&Path>) -> Result<Config, ConfigErrors> {
        match path {
            None => {
                let state = paths::state_dir().map_err(|message| {
                    ConfigErrors(vec![ConfigError {
                        file: EMBEDDED_NAME.to_owned(),
                        location: None,
                        path: String::new(),
                        message,
                    }])
                })?;
                Config::parse_at(EMBEDDED_NAME, EMBEDDED, paths::Base::Folder(state))
            }
            Some(p) => {
                let name = p.display().to_string();
                let text = std::fs::read_to_string(p).map_err(|e| {
                    ConfigErrors(vec![ConfigError {
                        file: name.clone(),
                        location: None,
                        path: String::new(),
                        message: format!("cannot read the file: {e}"),
                    }])
                })?;
                if is_blank(&text) {
                    return Err(ConfigErrors(vec![ConfigError {
                        file: name,
                        location: None,
                        path: String::new(),
                        message: format!("the file is empty (or only comments); {BLANK_HINT}"),
                    }]));
                }
                Config::parse_at(&name, &text, paths::Base::of_file(p))
            }
        }
    }

    /// The declared sandbox with this id.
    pub fn sandbox(&self, id: &str) -> Option<&SandboxSpec> {
        self.sandboxes.iter().find(|s| s.id == id)
    }

    /// Warn (`cordon run`, at start and at each reload) that the declared sandboxes with neither `token_sha256`
    /// nor `source_cidrs` cannot be reached through this proxy: they are for `cordon jail`, which makes a
    /// credential of its own for the sandbox it runs. (`cordon check` does not warn: such a file is right for a
    /// jail.)
    pub(crate) fn warn_jail_only(&self) {
        for s in self
            .sandboxes
            .iter()
            .filter(|s| s.token_sha256.is_none() && s.source_cidrs.is_empty())
        {
            tracing::warn!(
                sandbox = %s.id,
                "sandbox {} has neither token_sha256 nor source_cidrs: nothing reaches it through this proxy (it is \
                 for `cordon jail`, which makes a credential of its own); give it a token_sha256 (`cordon token \
                 hash`) to use it here",
                s.id
            );
        }
    }

    /// The exact shell command that runs `cordon ARGS` on this configuration, for a hint in a log line or an
    /// error, so the command acts on the same files from wherever the operator runs it: `--config` with the
    /// file's absolute path, whose relative paths are read against its folder; for the embedded configuration,
    /// `CORDON_STATE_DIR=...` in front when this process's state folder is not the one a plain `cordon` of the
    /// same user would choose; for a configuration given as text, a `cd` into the working folder its relative
    /// paths are read against.
    pub(crate) fn command(&self, args: &str) -> String {
        let quote = |s: &str| {
            shlex::try_quote(s)
                .map(|q| q.into_owned())
                .unwrap_or_else(|_| s.to_owned())
        };
        let mut line = String::new();
        match &self.base {
            paths::Base::AsWritten => {
                if let Ok(cwd) = std::env::current_dir() {
                    line.push_str(&format!("cd {} && ", quote(&cwd.display().to_string())));
                }
            }
            paths::Base::Folder(state) if self.source == EMBEDDED_NAME => {
                let plain = paths::state_dir_from(
                    &|name| match name {
                        paths::STATE_DIR_VAR | "STATE_DIRECTORY" => None,
                        other => std::env::var_os(other),
                    },
                    nix::unistd::geteuid().is_root(),
                );
                if plain.as_ref() != Ok(state) {
                    line.push_str(&format!(
                        "{}={} ",
                        paths::STATE_DIR_VAR,
                        quote(&state.display().to_string())
                    ));
                }
            }
            paths::Base::Folder(_) => {}
        }
        line.push_str("cordon ");
        line.push_str(args);
        if self.source != EMBEDDED_NAME {
            let path = std::path::Path::new(&self.source);
            let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
            line.push_str(" --config ");
            line.push_str(&quote(&absolute.display().to_string()));
        }
        line
    }

    /// The command that makes a sandbox a new CA on this configuration: what CA hints print.
    pub(crate) fn rotate_command(&self) -> crate::tls::ca::RotateCommand {
        let config = self.clone();
        std::sync::Arc::new(move |id: &crate::names::SandboxId| config.command(&format!("ca rotate --sandbox {id}")))
    }
}

/// The `log.format` the configuration at `path` (the embedded one when `None`) declares, read leniently: for
/// the format of its errors, so a file with errors elsewhere still has them written the way it asks. `None`
/// when the file cannot be read, is not YAML, or declares no format cordon writes.
pub(crate) fn declared_log_format(path: Option<&Path>) -> Option<LogFormat> {
    let text = match path {
        None => EMBEDDED.to_owned(),
        Some(p) => std::fs::read_to_string(p).ok()?,
    };
    let value: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).ok()?;
    match value.get("log")?.get("format")?.as_str()? {
        "text" => Some(LogFormat::Text),
        "json" => Some(LogFormat::Json),
        _ => None,
    }
}

/// A YAML (or JSON) document as a JSON value, e.g. a sandbox's own policy written in a file for the CLI; the
/// error names `source` with the line and column.
pub(crate) fn document(source: &str, text: &str) -> Result<serde_json::Value, String> {
    serde_yaml_ng::from_str(text).map_err(|e| match e.location() {
        Some(l) => format!(
            "{source}:{}:{}: {}",
            l.line(),
            l.column(),
            strip_location(&e.to_string())
        ),
        None => format!("{source}: {e}"),
    })
}

/// serde_yaml_ng appends "at line L column C"; the location is printed in front instead.
fn strip_location(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
