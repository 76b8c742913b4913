//! Validation of `audit:`: where records go, the chain's checkpoints, rotation and retention (and, in
//! `export.rs`, shipping).

use std::time::Duration;

use super::fields::secret_ref;
use super::fields::{A_COUNT, Errors, duration, flag, whole};
use super::limits::bytes;
use crate::config::model::{AuditChain, AuditConfig, AuditRotation};
use crate::config::raw::RawAudit;

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
    let otlp = raw.export.otlp.and_then(|o| super::export::otlp(errs, o, &to));
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
