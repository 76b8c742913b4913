//! `log:`: the format of operational logs, as written and validated.

use schemars::JsonSchema;
use serde::Deserialize;

use super::errors::Errors;
use super::shapes;

/// `log:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawLog {
    /// `text` (default) or `json`.
    #[schemars(with = "Option<shapes::LogFormat>")]
    pub(crate) format: Option<String>,
}

/// `log.format`: how operational logs (stderr) are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line (timestamp, level, message, fields), for a log pipeline.
    Json,
}

/// `log.format`: `text` (the default) or `json`.
pub(super) fn log_format(errs: &mut Errors, raw: RawLog) -> LogFormat {
    match raw.format.as_deref() {
        None | Some("text") => LogFormat::Text,
        Some("json") => LogFormat::Json,
        Some(other) => {
            errs.at(
                "log.format",
                format!("{other:?} is not a log format; write text or json"),
            );
            LogFormat::Text
        }
    }
}
