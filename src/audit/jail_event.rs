//! The records of a jail's life (kind `jail`): it started (with every limit and what holds it), it reached a
//! limit (which, its value, what holds it, how many times), it ended (its exit status); and of what its command
//! did (kinds `exec` and `file`). Each carries the sandbox and its user.

use std::net::SocketAddr;
use std::sync::Arc;

use super::kind::{ExecRecord, FileRecord, JailRecord, Kind};
use super::pending::Pending;
use super::sink::Sink;
use crate::reason::Reason;

/// Whose jail.
pub(crate) struct JailOf<'a> {
    /// The sandbox.
    pub(crate) sandbox: &'a str,
    /// Its user.
    pub(crate) user: &'a str,
}

/// Write the record of `event` for the jail of `of`.
pub(crate) fn jail_event(sink: &Arc<dyn Sink>, of: &JailOf<'_>, event: JailRecord) {
    let mut pending = Pending::start(sink.clone(), SocketAddr::from(([0, 0, 0, 0], 0)), Kind::Jail);
    pending.sandbox_id(of.sandbox);
    pending.visitor(of.user);
    let reason = match event.event {
        "start" => Reason::JailStarted,
        "end" => Reason::JailEnded,
        _ => Reason::JailLimit,
    };
    if event.event == "limit" {
        pending.refused(true, None, reason, crate::error::Side::Downstream, event.detail.clone());
    } else {
        pending.allowed(None, None);
        pending.reason(reason);
    }
    pending.jail(event);
    pending.finish();
}

/// Write the record of a program the jail of `of` started.
pub(crate) fn jail_exec(sink: &Arc<dyn Sink>, of: &JailOf<'_>, exec: ExecRecord) {
    let mut pending = Pending::start(sink.clone(), SocketAddr::from(([0, 0, 0, 0], 0)), Kind::Exec);
    pending.sandbox_id(of.sandbox);
    pending.visitor(of.user);
    pending.allowed(None, None);
    pending.reason(activity_reason(&exec.unreadable, exec.error, Reason::JailExec));
    pending.exec(exec);
    pending.finish();
}

/// Write the record of what the jail of `of` did to a file (or a summary of many).
pub(crate) fn jail_file_op(sink: &Arc<dyn Sink>, of: &JailOf<'_>, file: FileRecord) {
    let mut pending = Pending::start(sink.clone(), SocketAddr::from(([0, 0, 0, 0], 0)), Kind::File);
    pending.sandbox_id(of.sandbox);
    pending.visitor(of.user);
    pending.allowed(None, None);
    pending.reason(activity_reason(&file.unreadable, file.error, Reason::JailFileWritten));
    pending.file(file);
    pending.finish();
}

/// The reason of an activity record: `done` for a call cordon read and saw nothing refuse, else an attempt the
/// kernel refuses, or a call cordon could not read.
fn activity_reason(unreadable: &Option<String>, error: Option<&str>, done: Reason) -> Reason {
    if unreadable.is_some() {
        Reason::JailUnreadable
    } else if error.is_some() {
        Reason::JailAttempted
    } else {
        done
    }
}
