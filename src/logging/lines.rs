//! The lines cordon writes on standard error itself, outside the operational log: the fatal start-up errors
//! (the configuration's errors, a port in use, a refused CA folder) and the configuration's warnings. They
//! follow the operational log's format, so under `json` a log pipeline reads every line of a failed start too.
//!
//! The format is chosen before the configuration is read: `CORDON_LOG_FORMAT` when set (it overrides
//! `log.format`), else the file's own `log.format` when the file is YAML enough to say it, else text.

use std::io::Write;
use std::path::Path;

use serde_json::{Map, Value, json};

use crate::config::{ConfigErrors, LogFormat};

/// The environment variable that chooses the log format, over the configuration's `log.format`.
pub(crate) const ENV: &str = "CORDON_LOG_FORMAT";

/// Where cordon's own start-up lines go, and in which format.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stderr {
    format: LogFormat,
    /// Whether `CORDON_LOG_FORMAT` chose it (then the configuration's `log.format` does not).
    from_env: bool,
}

impl Stderr {
    /// Human-readable lines, whatever the environment says: for the commands people run at a terminal.
    pub(crate) fn text() -> Stderr {
        Stderr {
            format: LogFormat::Text,
            from_env: false,
        }
    }

    /// The format for a command that reads the configuration at `config` (the embedded one when `None`):
    /// `CORDON_LOG_FORMAT` if set, else what the file declares in `log.format`, else text. An invalid value of
    /// the variable is an error that names it.
    pub(crate) fn choose(config: Option<&Path>) -> Result<Stderr, String> {
        Ok(match from_env()? {
            Some(format) => Stderr { format, from_env: true },
            None => Stderr {
                format: crate::config::declared_log_format(config).unwrap_or_default(),
                from_env: false,
            },
        })
    }

    /// The format once the configuration is loaded: its `log.format`, unless the environment chose.
    pub(crate) fn configured(self, format: LogFormat) -> Stderr {
        if self.from_env { self } else { Stderr { format, ..self } }
    }

    /// The format chosen.
    pub(crate) fn format(self) -> LogFormat {
        self.format
    }

    /// A fatal error: `cordon: MESSAGE` as text, an `ERROR` object as JSON.
    pub(crate) fn error(self, message: &str) {
        self.write("ERROR", &format!("cordon: {message}"), message, Map::new());
    }

    /// A fatal error that names its file first (`FILE: MESSAGE`), written as it is in text.
    pub(crate) fn error_in_file(self, message: &str) {
        self.write("ERROR", message, message, Map::new());
    }

    /// A warning about the configuration: `warning: MESSAGE` as text, a `WARN` object as JSON.
    pub(crate) fn warn(self, message: &str) {
        self.write("WARN", &format!("warning: {message}"), message, Map::new());
    }

    /// Every error of a configuration, one line each (as JSON with its `file`, `line`, `column` and `path`
    /// fields where known), then how many there were and what that means (`then`, e.g. "nothing was
    /// started").
    pub(crate) fn config_errors(self, errors: &ConfigErrors, then: &str) {
        for e in &errors.0 {
            let mut fields = Map::new();
            fields.insert("file".into(), json!(e.file));
            if let Some((line, column)) = e.location {
                fields.insert("line".into(), json!(line));
                fields.insert("column".into(), json!(column));
            }
            if !e.path.is_empty() {
                fields.insert("path".into(), json!(e.path));
            }
            let line = e.to_string();
            self.write("ERROR", &line, &line, fields);
        }
        self.error(&format!("{} error(s); {then}", errors.0.len()));
    }

    /// Write one line: `text` in the text format; in JSON, an object with the operational log's `timestamp`,
    /// `level` and `message` and then `fields`.
    fn write(self, level: &str, text: &str, message: &str, fields: Map<String, Value>) {
        let line = match self.format {
            LogFormat::Text => text.to_owned(),
            LogFormat::Json => {
                let line = Line {
                    timestamp: crate::rfc3339::now_micros(),
                    level,
                    message,
                    fields,
                };
                serde_json::to_string(&line).unwrap_or_else(|_| message.to_owned())
            }
        };
        // Nothing is left to tell of a failure to write to stderr.
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
}

/// One JSON line, its fields in the operational log's order: `timestamp`, `level`, `message`, then the rest.
#[derive(serde::Serialize)]
struct Line<'a> {
    timestamp: String,
    level: &'a str,
    message: &'a str,
    #[serde(flatten)]
    fields: Map<String, Value>,
}

/// The format `CORDON_LOG_FORMAT` selects; `None` when it is unset or empty.
fn from_env() -> Result<Option<LogFormat>, String> {
    let value = match std::env::var(ENV) {
        Ok(v) => v,
        Err(std::env::VarError::NotPresent) => return Ok(None),
        Err(std::env::VarError::NotUnicode(v)) => {
            return Err(format!("{ENV}={v:?} is not a log format; write text or json"));
        }
    };
    match value.as_str() {
        "" => Ok(None),
        "text" => Ok(Some(LogFormat::Text)),
        "json" => Ok(Some(LogFormat::Json)),
        other => Err(format!("{ENV}={other:?} is not a log format; write text or json")),
    }
}
