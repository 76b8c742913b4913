//! `cordon audit`: the audit log's checkpoint key, and verifying audit files.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use super::args::{ConfigArg, load};
use crate::audit::verify::{Verification, verify};

/// Exit status: every line in place and the end sealed by cordon's final checkpoint.
const INTACT: u8 = 0;
/// Exit status: edited, deleted, inserted or reordered lines (also lines a signed checkpoint covers that are
/// missing: cut from the beginning, a file missing after a rotation, or beyond the end of the files where an
/// anchor covers them), or a signature that does not hold.
const TAMPERED: u8 = 1;
/// Exit status: the files cannot be read, or the arguments are wrong.
const UNUSABLE: u8 = 2;
/// Exit status: nothing changed, but the end is not sealed (a crash, a log still being written, or the last lines
/// removed: the files alone cannot tell which).
const UNSEALED: u8 = 3;
/// Exit status: signatures were checked and no checkpoint in the files is signed by the key, so nothing shows
/// cordon wrote them.
const NO_SIGNED_EVIDENCE: u8 = 4;

/// The exit status of each verdict: the one place they are set (the help text of `verify` and the audit page's
/// "Tamper evidence" list them; a test holds both to this).
fn exit_status(outcome: Verification) -> u8 {
    match outcome {
        Verification::Intact => INTACT,
        Verification::Tampered => TAMPERED,
        Verification::Unsealed => UNSEALED,
        Verification::NoSignedEvidence => NO_SIGNED_EVIDENCE,
    }
}

/// What to do.
#[derive(clap::Subcommand)]
pub(crate) enum AuditCommand {
    /// Print the public key (hex) of the audit checkpoints' signatures, from `audit.signing_key`.
    PublicKey {
        #[command(flatten)]
        config: ConfigArg,
    },
    /// Check audit files (rotated ones too, `.gz` included; any order): the hash chain and the checkpoint
    /// signatures. Exit 0 intact and sealed; 1 tampered (edited, deleted, inserted, reordered, a bad signature,
    /// lines a signed checkpoint covers missing); 3 unsealed (nothing changed, but the lines after the last
    /// checkpoint are not signed: a crash, still being written, or the last lines removed, which the files alone
    /// cannot tell apart; --anchor can); 4 no signed evidence (no checkpoint signed by the key: nothing shows
    /// cordon wrote the lines); 2 unusable input.
    Verify {
        /// The trusted public key (hex), as `cordon audit public-key` prints it.
        #[arg(long, conflicts_with = "config")]
        public_key: Option<String>,
        /// Take the key from this configuration's `audit.signing_key` instead.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Check the chain only, not the signatures (anyone can rewrite a chain; only the signatures prove
        /// who wrote it).
        #[arg(long, conflicts_with_all = ["public_key", "config", "anchor"])]
        no_signatures: bool,
        /// Signed checkpoints of this log kept off the machine (lines as the OTLP export shipped them; other lines
        /// are skipped): lines they cover that are missing or changed are tampering, also at the end. Repeatable.
        #[arg(long, value_name = "FILE")]
        anchor: Vec<PathBuf>,
        /// Print the result as JSON: {"verdict": "intact|tampered|unsealed|no_signed_evidence", "exit_code",
        /// "files" (oldest first), "lines", "signed_checkpoints", "anchors": {"given", "found"}, "tampering":
        /// ["FILE:LINE: what", ...], "notes": [...]}; the exit status is the same.
        #[arg(long)]
        json: bool,
        /// The audit files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

/// Run an `audit` command.
pub(crate) fn main(command: AuditCommand) -> ExitCode {
    match command {
        AuditCommand::PublicKey { config } => match key_of(&config) {
            Ok(key) => {
                outln!("{}", hex::encode(key));
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e),
        },
        AuditCommand::Verify {
            public_key,
            config,
            no_signatures,
            anchor,
            json,
            files,
        } => {
            let key = match (public_key, config) {
                (Some(hex_key), _) => match hex::decode(hex_key.trim()).ok().filter(|k| k.len() == 32) {
                    Some(k) => Some(k),
                    None => return fail("--public-key: not 32 bytes of hex, as `cordon audit public-key` prints"),
                },
                (None, Some(path)) => match key_of(&ConfigArg { config: Some(path) }) {
                    Ok(k) => Some(k),
                    Err(e) => return fail(&e),
                },
                (None, None) if no_signatures => None,
                (None, None) => {
                    return fail(
                        "give the trusted key (--public-key HEX, or --config FILE with audit.signing_key), or \
                         --no-signatures to check the chain alone",
                    );
                }
            };
            run_verify(&files, key.as_deref(), &anchor, json)
        }
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("cordon: {message}");
    ExitCode::from(UNUSABLE)
}

fn run_verify(paths: &[PathBuf], key: Option<&[u8]>, anchor_paths: &[PathBuf], json: bool) -> ExitCode {
    let mut anchors = Vec::new();
    for path in anchor_paths {
        let text = match read(path) {
            Ok(text) => text,
            Err(e) => return fail(&format!("cannot read {}: {e}", path.display())),
        };
        // clap refuses --anchor with --no-signatures, and every other way gives a key.
        let Some(key) = key else {
            return fail("--anchor needs the trusted key");
        };
        match crate::audit::verify::anchors(&path.display().to_string(), &text, key) {
            Ok(found) => anchors.extend(found),
            Err(e) => return fail(&format!("--anchor {e}")),
        }
    }
    let mut files = Vec::new();
    for path in paths {
        match read(path) {
            Ok(text) => files.push((path.display().to_string(), text)),
            Err(e) => return fail(&format!("cannot read {}: {e}", path.display())),
        }
    }
    // Oldest first, by the first `seq` each holds (rotated files may be given in any order).
    files.sort_by_key(|(_, text)| first_seq(text));
    let report = verify(&files, key, &anchors);
    let outcome = report.outcome();
    if json {
        let names: Vec<&str> = files.iter().map(|(name, _)| name.as_str()).collect();
        let shape = serde_json::json!({
            "verdict": match outcome {
                Verification::Intact => "intact",
                Verification::Tampered => "tampered",
                Verification::Unsealed => "unsealed",
                Verification::NoSignedEvidence => "no_signed_evidence",
            },
            "exit_code": exit_status(outcome),
            "files": names,
            "lines": report.lines,
            "signed_checkpoints": report.signed,
            "anchors": { "given": anchors.len(), "found": report.anchored },
            "tampering": report.tampering,
            "notes": report.notes,
        });
        out!("{}", super::sandbox::pretty(&shape));
        return ExitCode::from(exit_status(outcome));
    }
    let paint = super::style::Paint::stdout();
    for t in &report.tampering {
        outln!("{} {t}", paint.bad("TAMPERED"));
    }
    for n in &report.notes {
        outln!("note     {n}");
    }
    let verdict = match outcome {
        Verification::Intact => paint.good("intact: every line in place, the end sealed by cordon's final checkpoint"),
        Verification::Unsealed => paint.doubt("no change found, but the end is not sealed (see the note)"),
        Verification::NoSignedEvidence => {
            paint.doubt("no signed evidence: no checkpoint signed by this key (see the note)")
        }
        Verification::Tampered => paint.bad("TAMPERED"),
    };
    let anchored = if anchors.is_empty() {
        String::new()
    } else {
        format!(", {} of {} anchor(s) found", report.anchored, anchors.len())
    };
    outln!(
        "verdict  {verdict} ({} lines in {} file(s), {} signed checkpoint(s){anchored})",
        report.lines,
        files.len(),
        report.signed
    );
    ExitCode::from(exit_status(outcome))
}

/// A file's bytes, decompressed when it is gzip.
fn read(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    let raw = std::fs::read(path)?;
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut text = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..]).read_to_end(&mut text)?;
        return Ok(text);
    }
    Ok(raw)
}

fn first_seq(text: &[u8]) -> u64 {
    text.split(|b| *b == b'\n')
        .find_map(|l| {
            serde_json::from_slice::<serde_json::Value>(l)
                .ok()?
                .get("seq")?
                .as_u64()
        })
        .unwrap_or(u64::MAX)
}

/// The checkpoints' public key from the configuration's `audit.signing_key`.
fn key_of(arg: &ConfigArg) -> Result<Vec<u8>, String> {
    use secrecy::ExposeSecret;
    let config = load(arg).map_err(|_| "the configuration has errors (printed above)".to_string())?;
    let Some(r) = config.audit_chain.signing_key.clone() else {
        return Err("the configuration sets no audit.signing_key: its checkpoints are not signed".into());
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let credentials = crate::inject::apply::Credentials::new(&config)?;
    let secret = rt
        .block_on(credentials.secrets().stored(&r))
        .map_err(|e| format!("audit.signing_key: {e}"))?;
    let signer = crate::audit::chain::CheckpointSigner::from_secret(secret.expose_secret())?;
    hex::decode(signer.public_hex()).map_err(|e| e.to_string())
}

#[cfg(test)]
#[path = "audit_tests.rs"]
mod tests;
