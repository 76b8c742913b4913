//! `audit:`: where records go, the chain's checkpoints, rotation and retention (and, in `export.rs`,
//! shipping), as written and validated.

use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::credentials::{RawSecretRef, secret_ref};
use super::errors::Errors;
use super::export::{OtlpExport, RawExport};
use super::fields::{A_COUNT, bytes, duration, flag, whole};
use super::scalars::{Flag, Whole};
use super::shapes;

/// `audit:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawAudit {
    /// `-` for stdout, or a file path (appended to).
    pub(crate) path: Option<String>,
    /// Whether lines are chained and checkpointed (default true).
    pub(crate) chain: Option<Flag>,
    /// The secret the checkpoints' Ed25519 key is derived from.
    pub(crate) signing_key: Option<RawSecretRef>,
    /// How often a checkpoint is written while records are.
    #[schemars(with = "Option<shapes::Duration>")]
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
pub(super) struct RawRotate {
    /// A size, e.g. `100MiB`.
    #[schemars(with = "Option<shapes::Size>")]
    pub(crate) size: Option<String>,
    /// A duration, e.g. `1d`.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) every: Option<String>,
}

/// `audit.retain:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawRetain {
    /// How many rotated files.
    pub(crate) files: Option<Whole>,
    /// How old, e.g. `30d`.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) age: Option<String>,
}

/// `audit.signing_key` and `audit.checkpoint_interval`.
#[derive(Debug, Clone)]
pub(crate) struct AuditChain {
    /// Whether lines carry `seq`/`prev` and checkpoints are written (`audit.chain`, default true).
    pub(crate) enabled: bool,
    /// The secret the checkpoints' key is derived from; `None`: checkpoints are written unsigned.
    pub(crate) signing_key: Option<crate::config::credentials::SecretRef>,
    /// How often a checkpoint is written while records are (and always when cordon stops).
    pub(crate) checkpoint_interval: Duration,
    /// `audit.rotate`, `audit.retain`, `audit.compress` (a file only).
    pub(crate) rotation: AuditRotation,
    /// `audit.export.otlp`: records shipped as OpenTelemetry logs.
    pub(crate) otlp: Option<OtlpExport>,
}

/// When the audit file is rotated, and which rotated files are kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AuditRotation {
    /// Rotate once the file holds this many bytes.
    pub(crate) size: Option<u64>,
    /// Rotate once the file has been written to for this long.
    pub(crate) every: Option<Duration>,
    /// Keep at most this many rotated files.
    pub(crate) keep_files: Option<usize>,
    /// Delete rotated files older than this.
    pub(crate) keep_for: Option<Duration>,
    /// Compress rotated files (gzip).
    pub(crate) compress: bool,
}

/// Where audit records go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AuditConfig {
    /// Standard output.
    Stdout,
    /// Appended to this file.
    File(PathBuf),
}

/// `audit:`: where records go, and the chain with its checkpoints, rotation, retention and export.
pub(super) fn audit(errs: &mut Errors, raw: RawAudit) -> (AuditConfig, AuditChain) {
    let to = match raw.path.as_deref() {
        None | Some("-") => AuditConfig::Stdout,
        Some("") => {
            errs.at("audit.path", "is empty; write \"-\" for standard output or a file path");
            AuditConfig::Stdout
        }
        Some(p) => AuditConfig::File(errs.path(p)),
    };
    let optional = |errs: &mut Errors, path: &str, text: Option<String>| {
        text.map(|t| duration(errs, path, Some(t), Duration::from_secs(1)))
    };
    let files = whole(errs, "audit.retain.files", raw.retain.files, A_COUNT);
    let keep_files = files.and_then(|n| match usize::try_from(n) {
        Ok(n) if n >= 1 => Some(n),
        _ => {
            errs.at(
                "audit.retain.files",
                format!("{n} must be at least 1 (leave it out to keep every rotated file)"),
            );
            None
        }
    });
    let rotation = AuditRotation {
        size: bytes(errs, "audit.rotate.size", raw.rotate.size),
        every: optional(errs, "audit.rotate.every", raw.rotate.every),
        keep_files,
        keep_for: optional(errs, "audit.retain.age", raw.retain.age),
        compress: flag(errs, "audit.compress", raw.compress).unwrap_or(true),
    };
    let rotates = rotation.size.is_some() || rotation.every.is_some();
    if to == AuditConfig::Stdout && (rotates || keep_files.is_some() || rotation.keep_for.is_some()) {
        errs.at(
            "audit.rotate",
            "rotation and retention apply to an audit file; set audit.path to a file, or remove them",
        );
    }
    if !rotates && (keep_files.is_some() || rotation.keep_for.is_some()) {
        errs.warn(
            "audit.retain",
            "applies to rotated files, and audit.rotate is not set: cordon rotates nothing (an external logrotate's \
             files are its own to delete)",
        );
    }
    let file = match &to {
        AuditConfig::File(p) => Some(p.as_path()),
        AuditConfig::Stdout => None,
    };
    let otlp = raw.export.otlp.and_then(|o| super::export::otlp(errs, o, file));
    let enabled = flag(errs, "audit.chain", raw.chain).unwrap_or(true);
    if !enabled {
        if otlp.is_some() {
            errs.at(
                "audit.chain",
                "false leaves records without the seq a collector de-duplicates on; keep the chain with audit.export",
            );
        } else {
            errs.warn(
                "audit.chain",
                "is false: records carry no seq or prev and no checkpoints are written, so editing, deleting or \
                 reordering them cannot be detected (`cordon audit verify` has nothing to check)",
            );
        }
        if raw.signing_key.is_some() {
            errs.at(
                "audit.signing_key",
                "signs the chain's checkpoints, and audit.chain is false",
            );
        }
    }
    let chain = AuditChain {
        enabled,
        signing_key: raw.signing_key.and_then(|r| secret_ref(errs, "audit.signing_key", r)),
        checkpoint_interval: duration(
            errs,
            "audit.checkpoint_interval",
            raw.checkpoint_interval,
            Duration::from_secs(10),
        ),
        rotation,
        otlp,
    };
    (to, chain)
}
