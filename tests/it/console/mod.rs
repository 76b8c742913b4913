//! The console, the approval inbox in the browser, through the binary and headless Chromium: people sign in
//! through a real OpenID Connect provider, see held requests appear without reloading (an MCP call's arguments
//! whole), decide them, and the audit records name who they are; a viewer sees but cannot decide, forged forms
//! from other pages and other ports do nothing, no other port of the host gets a session, a reload that lowers
//! roles applies to open pages, one person's streams leave others theirs, and ID tokens that are not right are
//! refused. Also the admin listener's TLS and client certificates (for the console's token sign-in too), and
//! what `cordon check` and `cordon run` refuse.

mod certs;
mod held;
pub(crate) mod inbox;
mod listener;
mod live;
mod origins;
mod sign_in;

use crate::rigs::console::ConsoleRig;

/// Where screenshots go: the docs' folder when CORDON_SCREENSHOTS=docs (to refresh them), else the test's own.
pub(crate) fn screenshot_path(rig: &ConsoleRig, name: &str) -> std::path::PathBuf {
    match std::env::var("CORDON_SCREENSHOTS").as_deref() {
        Ok("docs") => std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("docs/src/img")
            .join(name),
        _ => rig.dir.path().join(name),
    }
}
