//! `audit:` as written.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::shapes::{Duration, HttpUrl, Size};
use super::{Flag, Whole};

use super::RawSecretRef;

/// `audit:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(in crate::config) struct RawAudit {
    /// `-` for stdout, or a file path (appended to).
    pub(crate) path: Option<String>,
    /// Whether lines are chained and checkpointed (default true).
    pub(crate) chain: Option<Flag>,
    /// The secret the checkpoints' Ed25519 key is derived from.
    pub(crate) signing_key: Option<RawSecretRef>,
    /// How often a checkpoint is written while records are.
    #[schemars(with = "Option<Duration>")]
    pub(crate) checkpoint_interval: Option<String>,
    /// When the file is rotated.
    #[serde(default)]
    pub(crate) rotate: RawRotate,
    /// Which rotated files are kept.
    #[serde(default)]
    pub(crate) retain: RawRetain,
    /// Whether rotated files are compressed (gzip; default true).
    pub(crate) compress: Option<Flag>,
    /// Where records are shipped besides.
    #[serde(default)]
    pub(crate) export: RawExport,
    /// Whether a jail records every program it starts and every file it writes (default true).
    pub(crate) activity: Option<Flag>,
}

/// `audit.rotate:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(in crate::config) struct RawRotate {
    /// A size, e.g. `100MiB`.
    #[schemars(with = "Option<Size>")]
    pub(crate) size: Option<String>,
    /// A duration, e.g. `1d`.
    #[schemars(with = "Option<Duration>")]
    pub(crate) every: Option<String>,
}

/// `audit.retain:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(in crate::config) struct RawRetain {
    /// How many rotated files.
    pub(crate) files: Option<Whole>,
    /// How old, e.g. `30d`.
    #[schemars(with = "Option<Duration>")]
    pub(crate) age: Option<String>,
}

/// `audit.export:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(in crate::config) struct RawExport {
    /// OpenTelemetry logs over OTLP/HTTP.
    pub(crate) otlp: Option<RawOtlp>,
}

/// `audit.export.otlp:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(in crate::config) struct RawOtlp {
    /// The collector's logs URL, e.g. `https://collector:4318/v1/logs`.
    #[schemars(with = "Option<HttpUrl>")]
    pub(crate) endpoint: Option<String>,
    /// Headers sent with every export (an API key), their values from secret sources.
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, RawSecretRef>,
    /// PEM roots to trust for the collector, besides the web's.
    pub(crate) ca_file: Option<String>,
    /// Records per export request at most.
    pub(crate) batch: Option<Whole>,
    /// How long records wait at most for a batch to fill.
    #[schemars(with = "Option<Duration>")]
    pub(crate) interval: Option<String>,
    /// How long one export request may take.
    #[schemars(with = "Option<Duration>")]
    pub(crate) timeout: Option<String>,
    /// `service.instance.id` of the records (default: the host name).
    pub(crate) instance: Option<String>,
    /// Where records wait for the collector.
    #[serde(default)]
    pub(crate) spool: RawSpool,
}

/// `audit.export.otlp.spool:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(in crate::config) struct RawSpool {
    /// A folder of its own.
    pub(crate) path: Option<String>,
    /// The most it holds, e.g. `256MiB`.
    #[schemars(with = "Option<Size>")]
    pub(crate) max: Option<String>,
}
