//! The record of a file a jailed command changed that developer tools run on the host (kind `jail_file`): the
//! sandbox, the file in `path`, and its SHA-256 `before` and `after` (`null`: it did not exist) in `sha256`.

use std::net::SocketAddr;
use std::sync::Arc;

use super::kind::{Hashes, Kind};
use super::pending::Pending;
use super::sink::Sink;

/// One changed file, as its record says it.
pub(crate) struct FileChange<'a> {
    /// The sandbox the jail was for.
    pub(crate) sandbox: &'a str,
    /// The file.
    pub(crate) path: &'a str,
    /// Its SHA-256 before.
    pub(crate) before: Option<&'a str>,
    /// Its SHA-256 after.
    pub(crate) after: Option<&'a str>,
}

/// Write the record of `change`: an `allow` (the write was allowed) with reason `jail_file_changed`.
pub(crate) fn jail_file(sink: &Arc<dyn Sink>, change: FileChange<'_>) {
    let mut pending = Pending::start(sink.clone(), SocketAddr::from(([0, 0, 0, 0], 0)), Kind::JailFile);
    pending.sandbox_id(change.sandbox);
    pending.path(change.path);
    pending.allowed(None, None);
    pending.reason(crate::reason::Reason::JailFileChanged);
    pending.sha256(Hashes {
        before: change.before.map(str::to_owned),
        after: change.after.map(str::to_owned),
    });
    pending.finish();
}
