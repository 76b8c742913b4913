//! What this build of cordon is: its version, the git commit and the date it was built from (written by
//! build.rs; `unknown` where it could not tell, as in a build from a tarball), the target triple it was built
//! for and the compiler's version.
//! `cordon --version` prints [`LONG`]; `cordon_build_info` carries the same values as labels.

/// The package version, e.g. `0.1.0`.
pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The git commit built (12 hex digits), or `unknown`.
pub(crate) const COMMIT: &str = env!("CORDON_GIT_COMMIT");
/// The version of rustc that built it, e.g. `1.90.0`.
pub(crate) const RUSTC: &str = env!("CORDON_RUSTC_VERSION");
/// What `cordon --version` prints after the name:
/// `0.1.0 (commit 0123456789ab, built 2026-12-03, x86_64-unknown-linux-gnu)`.
pub(crate) const LONG: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("CORDON_GIT_COMMIT"),
    ", built ",
    env!("CORDON_BUILD_DATE"),
    ", ",
    env!("CORDON_TARGET"),
    ")"
);
