//! The errors of the CA store and leaf minting, each saying what went wrong and how to fix it.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use time::OffsetDateTime;

/// Errors of the TLS modules, each saying what went wrong and, where a person can fix it, how.
#[derive(Debug, thiserror::Error)]
pub enum CaError {
    /// The sandbox id cannot name a CA folder.
    #[error("invalid sandbox id {id:?}: {reason}")]
    InvalidSandboxId {
        /// The id as given.
        id: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// An entry of a [`Scope`] cannot be written as a name constraint.
    #[error("invalid CA scope entry {entry:?}: {reason}")]
    InvalidScope {
        /// The entry as given.
        entry: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A file operation failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What cordon was doing, e.g. "read".
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// The CA key file can be read by other users.
    #[error(
        "{} is readable by group or others (mode {mode:03o}); a CA key must be private to cordon: run `chmod 600 {}`",
        path.display(),
        path.display()
    )]
    KeyPermissions {
        /// The key file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A CA folder can be written by other users.
    #[error(
        "{} is writable by group or others (mode {mode:03o}), so someone else could replace the CA in it: run `chmod 700 {}`",
        path.display(),
        path.display()
    )]
    DirPermissions {
        /// The folder.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A CA folder, or a key, belongs to another user than cordon's (and not to root).
    #[error(
        "{} belongs to uid {owner}, not to cordon's user (uid {me}): another user could have made the CA in it. \
         If it is yours, run `chown -R {me} {}`; otherwise remove it (a new CA is made on first need)",
        path.display(),
        path.display()
    )]
    Owner {
        /// The folder or file.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// cordon's (effective) user.
        me: u32,
    },
    /// `ca.dir` itself is not private to cordon (the message says why and what to do).
    #[error("{0}")]
    Folder(String),
    /// Something that should be a folder is not.
    #[error("{} is not a directory", path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// One file of the pair exists without the other.
    #[error(
        "{} exists but {} does not (restore the missing file if you have it)",
        present.display(),
        missing.display()
    )]
    Incomplete {
        /// The file that exists.
        present: PathBuf,
        /// The file that is missing.
        missing: PathBuf,
    },
    /// The certificate file cannot be used as a CA.
    #[error("{} is not a usable CA certificate: {reason}", path.display())]
    BadCert {
        /// The certificate file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The key file cannot be used.
    #[error("{} is not a usable CA key: {reason}", path.display())]
    BadKey {
        /// The key file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The certificate was not made for the key.
    #[error(
        "{} does not belong to {}: the certificate's public key is not the key's (restore the matching pair if you \
         have it)",
        cert.display(),
        key.display()
    )]
    KeyMismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
    /// The CA certificate has expired.
    #[error("{} expired on {not_after}", path.display())]
    Expired {
        /// The certificate file.
        path: PathBuf,
        /// When it expired.
        not_after: OffsetDateTime,
    },
    /// The certificate's name constraints are not of the form cordon writes, so its scope cannot be reported
    /// faithfully.
    #[error(
        "{} has name constraints cordon did not write ({reason})",
        path.display()
    )]
    UnsupportedConstraints {
        /// The certificate file.
        path: PathBuf,
        /// What differs.
        reason: String,
    },
    /// A leaf was asked for a name that cannot be put in a certificate.
    #[error("cannot mint a certificate for {name:?}: {reason}")]
    InvalidName {
        /// The name as given.
        name: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A leaf was asked for a name the sandbox's CA may not sign for (clients would reject it).
    #[error(
        "{name} is outside the names the CA of sandbox {sandbox} may sign for (its name constraints were fixed when it \
         was made)"
    )]
    OutOfScope {
        /// The sandbox.
        sandbox: String,
        /// The name.
        name: String,
    },
    /// Key or certificate generation failed.
    #[error("cannot generate {what}: {source}")]
    Generate {
        /// What was being generated.
        what: &'static str,
        /// rcgen's error.
        source: rcgen::Error,
    },
    /// The leaf validity cannot be used.
    #[error("invalid leaf validity: {0}")]
    InvalidValidity(&'static str),
    /// The system's random number generator failed.
    #[error("the system random number generator failed")]
    Random,
    /// rustls refused the certificate chain or key.
    #[error("cannot build a TLS server configuration: {0}")]
    Tls(#[from] rustls::Error),
    /// The shared CA store (PostgreSQL) failed, or does not hold this sandbox's CA yet.
    #[error("the shared CA store: {0}")]
    Store(String),
    /// The same error, handed to every caller that waited for one leaf to be minted.
    #[error("{0}")]
    Awaited(Arc<CaError>),
    /// An error of a sandbox's CA that a new CA fixes, with the exact command that makes one.
    #[error("{error}; run `{command}` to make a new CA")]
    Remedied {
        /// What is wrong with the CA.
        error: Box<CaError>,
        /// The `cordon ca rotate` command line for this sandbox and configuration.
        command: String,
    },
}

impl CaError {
    /// The error itself, without the remedy [`CaError::Remedied`] adds (what tests match on).
    #[cfg(test)]
    pub(crate) fn cause(&self) -> &CaError {
        match self {
            CaError::Remedied { error, .. } => error,
            other => other,
        }
    }

    /// Whether a new CA (`cordon ca rotate`) is the remedy: the pair on disk is incomplete, mismatched, expired,
    /// unreadable as a CA or constrained in a way cordon did not write. Not for a folder's owner or mode, which a
    /// rotation would meet again.
    pub(crate) fn rotation_fixes(&self) -> bool {
        matches!(
            self,
            CaError::Incomplete { .. }
                | CaError::KeyMismatch { .. }
                | CaError::Expired { .. }
                | CaError::UnsupportedConstraints { .. }
                | CaError::BadCert { .. }
                | CaError::BadKey { .. }
        )
    }
}

pub(super) fn io_err(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> CaError {
    let path = path.to_path_buf();
    move |source| CaError::Io { action, path, source }
}
