//! Telling systemd how the service stands (`sd_notify`, for `Type=notify` units such as
//! deploy/systemd/cordon.service): `READY=1` once every listener is bound and the state is built, `RELOADING=1`
//! and `READY=1` around a SIGHUP reload, `STOPPING=1` when the drain starts. Without `NOTIFY_SOCKET` (not
//! started by systemd) each call does nothing.

use sd_notify::NotifyState;

/// cordon serves: its listeners are bound and its state is built. `status` is what `systemctl status` shows.
pub(crate) fn ready(status: &str) {
    send(&[NotifyState::Ready, NotifyState::Status(status)]);
}

/// A reload (SIGHUP) begins; [`reloaded`] ends it.
pub(crate) fn reloading() {
    // systemd matches the reload with the time it was asked for.
    match NotifyState::monotonic_usec_now() {
        Ok(now) => send(&[NotifyState::Reloading, now]),
        Err(_) => send(&[NotifyState::Reloading]),
    }
}

/// The reload [`reloading`] announced is over (applied or refused: cordon serves either way).
pub(crate) fn reloaded() {
    send(&[NotifyState::Ready]);
}

/// The drain begins: cordon accepts nothing new and stops once what is open has finished.
pub(crate) fn stopping() {
    send(&[NotifyState::Stopping, NotifyState::Status("draining")]);
}

/// Send `states`; a failure is a warning (systemd then times the start out, which names the cause).
fn send(states: &[NotifyState<'_>]) {
    if let Err(e) = sd_notify::notify(states) {
        tracing::warn!("cannot notify systemd through NOTIFY_SOCKET: {e}");
    }
}
