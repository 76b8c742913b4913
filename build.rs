//! What `cordon --version` and the `cordon_build_info` metric say about the build: the git commit (from git
//! when the source is a checkout; `unknown` in a tarball build or without git), the build date (UTC;
//! `SOURCE_DATE_EPOCH` when set, for reproducible builds), the target triple it was built for and the
//! compiler's version.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_owned());
    // Rebuild when the checkout moves to another commit: HEAD, and the branch it points at. Only files that
    // exist: cargo takes a missing one as changed, and would run this script (and rebuild cordon) every time
    // (a checkout without packed-refs: each fuzz target rebuilt cordon from scratch).
    let watch = |p: String| {
        let abs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(&p);
        if abs.exists() {
            println!("cargo:rerun-if-changed={p}");
        }
    };
    for path in ["HEAD", "packed-refs"] {
        if let Some(p) = git(&["rev-parse", "--git-path", path]) {
            watch(p);
        }
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"])
        && let Some(p) = git(&["rev-parse", "--git-path", &branch])
    {
        watch(p);
    }
    let epoch = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .and_then(|s| time::OffsetDateTime::from_unix_timestamp(s).ok())
        .unwrap_or_else(time::OffsetDateTime::now_utc);
    let date = epoch
        .format(time::macros::format_description!("[year]-[month]-[day]"))
        .unwrap_or_else(|_| "unknown".to_owned());
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let rustc = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|v| v.split_whitespace().nth(1).map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=CORDON_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=CORDON_BUILD_DATE={date}");
    println!("cargo:rustc-env=CORDON_RUSTC_VERSION={rustc}");
    // Cargo sets TARGET for build scripts: the triple the crate is compiled for (not the host's, when cross).
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".to_owned());
    println!("cargo:rustc-env=CORDON_TARGET={target}");
}

/// The trimmed output of `git ARGS` run in the package's folder, if git is there and succeeds.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| text.to_owned())
}
