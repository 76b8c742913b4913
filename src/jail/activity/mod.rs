//! A jail's activity log: every program its command starts and every file it writes, creates, renames or
//! removes, as audit records (kinds `exec` and `file`) in the same hash-chained log as its network records,
//! with the sandbox and its user.
//!
//! The mechanism is seccomp user notification, which needs no privilege, so both jails have it: inside the jail,
//! before the command starts, the process that starts it puts itself under the activity filter ([`filter`]) and
//! hands the filter's listener to cordon over a Unix socket ([`arm`]: the relay of the jail without root, or
//! `cordon jail-activity` in the root jail); cordon then reads each matching call while it waits ([`decode`]),
//! lets it go on, and writes the record ([`Recorder`]), at most so many one by one ([`rate`]).
//!
//! It is a record, not a gate: every call goes on. Each call is read as its caller sees it: its memory
//! ([`memory`]), its paths resolved in its root from its folder or descriptor ([`resolve`], [`links`]), what the
//! kernel will refuse for certain ([`outcome`]: an attempt, recorded with the error); what cannot be read is
//! recorded as unreadable, and only a call whose caller was killed while it waited (so it never ran) leaves no
//! record. What it cannot see: a call another thread changes the memory of between cordon's read and the
//! kernel's (the record then names what was asked first); bytes written, which only `close` would tell, and
//! bytes written through a descriptor opened before the log began, passed in, or mapped (`mmap`); metadata
//! (`chmod`, `chown`, times, extended attributes); whether a call cordon saw nothing refuse then worked.

mod calls;
mod decode;
mod filter;
pub(crate) mod gvisor;
mod gvisor_wire;
mod links;
mod memory;
mod outcome;
mod rate;
mod resolve;

use std::io::Write;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::audit::{Aggregated, ExecRecord, FileRecord, JailOf, Sink};
use crate::names::SandboxId;
use decode::CallEvent;

/// The word sent with the listener when the filter is in place.
const ON: &[u8] = b"on";

/// Inside the jail: put the calling thread (and so everything it starts from now on) under the activity filter
/// and hand the listener to cordon at `socket`. A kernel without user notification leaves the log off: cordon is
/// told why, and the command runs.
pub(crate) fn arm(socket: &Path) -> Result<(), String> {
    let mut stream =
        UnixStream::connect(socket).map_err(|e| format!("cannot reach cordon at {}: {e}", socket.display()))?;
    let installed = filter::program()
        .and_then(|p| cordon_unotify::install(&p).map_err(|e| format!("seccomp user notification (Linux 5.5+): {e}")));
    match installed {
        Ok(listener) => cordon_unotify::send(listener, &stream, ON)
            .map_err(|e| format!("cannot hand the activity listener to cordon: {e}")),
        Err(why) => stream
            .write_all(why.as_bytes())
            .map_err(|e| format!("cannot tell cordon the activity log is off: {e}")),
    }
}

/// cordon's side: the socket the jail hands its listener to, and the thread that records what it is told.
pub(crate) struct Recorder {
    socket: PathBuf,
    worker: Worker,
}

/// Whose activity, and where its records go.
struct Log {
    sink: Arc<dyn Sink>,
    sandbox: SandboxId,
    user: String,
}

impl Log {
    fn of(&self) -> JailOf<'_> {
        JailOf {
            sandbox: self.sandbox.as_str(),
            user: &self.user,
        }
    }
}

impl Recorder {
    /// Listen at `dir/activity.sock` (any user may connect: the first connection is the jail's, and the socket is
    /// removed once it came) and record what the jail of `sandbox` and `user` hands over, into `sink`.
    pub(crate) fn start(dir: &Path, sink: Arc<dyn Sink>, sandbox: &SandboxId, user: &str) -> Result<Recorder, String> {
        use std::os::unix::fs::PermissionsExt;
        let socket = dir.join("activity.sock");
        let _ = std::fs::remove_file(&socket);
        let listener =
            UnixListener::bind(&socket).map_err(|e| format!("cannot listen on {}: {e}", socket.display()))?;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666))
            .map_err(|e| format!("cannot open {} to the jail: {e}", socket.display()))?;
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let log = Log {
            sink,
            sandbox: sandbox.clone(),
            user: user.to_owned(),
        };
        let path = socket.clone();
        let worker = Worker::spawn("cordon-activity", move |stop| record(&listener, &path, &stop, &log))?;
        Ok(Recorder { socket, worker })
    }

    /// The socket, for the jail's side.
    pub(crate) fn socket(&self) -> &Path {
        &self.socket
    }

    /// Stop once every call of the jail was recorded (its processes are gone), writing the last summaries.
    pub(crate) fn finish(mut self) {
        self.worker.finish();
    }
}

/// A recorder's thread and the flag that tells it to stop (set when it is finished or dropped).
struct Worker {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Worker {
    /// Start `work` on a thread named `name`; it stops when the flag it is given is set.
    fn spawn(name: &str, work: impl FnOnce(Arc<AtomicBool>) + Send + 'static) -> Result<Worker, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || work(flag))
            .map_err(|e| format!("cannot start the activity recorder: {e}"))?;
        Ok(Worker {
            stop,
            thread: Some(thread),
        })
    }

    /// Tell the thread to stop, and wait for it.
    fn finish(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Wait for the jail's connection (until `stop`), take its listener, and record each call until the jail is gone.
fn record(socket: &UnixListener, path: &Path, stop: &AtomicBool, log: &Log) {
    let stream = loop {
        match socket.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => {
                tracing::warn!("activity log: the jail's connection failed: {e}");
                return;
            }
        }
    };
    // SECURITY: only the first connection is the jail's; nothing can connect after it.
    let _ = std::fs::remove_file(path);
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let listener = match cordon_unotify::receive(&stream) {
        Ok((Some(l), word)) if word == ON => l,
        Ok((_, word)) => {
            let why = String::from_utf8_lossy(&word);
            eprintln!("cordon jail: activity log off: {why}");
            tracing::warn!(sandbox = %log.sandbox, "activity log off: {why}");
            return;
        }
        Err(e) => {
            eprintln!("cordon jail: activity log off: nothing came from the jail ({e})");
            return;
        }
    };
    watch(&listener, stop, log);
}

/// Answer and record every call `listener` is told of, until the jail's processes are gone (or `stop` and a
/// quiet moment).
fn watch(listener: &cordon_unotify::Listener, stop: &AtomicBool, log: &Log) {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    let mut tally = rate::Tally::default();
    loop {
        let ready = {
            let mut fds = [PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, PollTimeout::from(200u16)) {
                Ok(n) if n > 0 => fds[0].revents(),
                _ => None,
            }
        };
        if tally.due() {
            summarise(&mut tally, log);
        }
        match ready {
            Some(r) if r.contains(PollFlags::POLLIN) => {
                let Ok(n) = listener.recv() else { continue };
                // Read while the call waits, then let it go on (a record, not a gate), then write the record.
                let event = decode::event(&n);
                let valid = listener.is_valid(n.id);
                let _ = listener.allow(n.id);
                if let (true, Some(event)) = (valid, event) {
                    write(&mut tally, log, event);
                }
            }
            Some(r) if r.contains(PollFlags::POLLHUP) => break,
            _ if stop.load(Ordering::Relaxed) => break,
            _ => {}
        }
    }
    summarise(&mut tally, log);
}

/// The record of `event`, or its count towards a summary: keyed by the program, or by the folder the file is in
/// (both resolved as the command sees them; `?` for what could not be read).
fn write(tally: &mut rate::Tally, log: &Log, event: CallEvent) {
    match event {
        CallEvent::Exec {
            path,
            argv,
            truncated,
            cwd,
            pid,
            ppid,
            uid,
            anonymous,
            error,
            unreadable,
        } => {
            if tally.admit("exec", &path, &cwd) {
                let exec = ExecRecord {
                    path,
                    argv: Some(argv),
                    truncated,
                    cwd: Some(cwd),
                    pid: Some(pid),
                    ppid,
                    uid: Some(uid),
                    anonymous,
                    error,
                    unreadable,
                    aggregated: None,
                };
                crate::audit::jail_exec(&log.sink, &log.of(), exec);
            }
        }
        CallEvent::File {
            op,
            path,
            to,
            pid,
            error,
            unreadable,
            syscall,
        } => {
            let folder = match path.rfind('/') {
                Some(0) => "/",
                Some(i) => &path[..i],
                None => "?",
            };
            // A summary counts attempts and unreadable calls apart from what was done.
            let what = match (&unreadable, error) {
                (Some(_), _) => "unreadable".to_owned(),
                (None, Some(e)) => format!("{op} {e}"),
                (None, None) => op.to_owned(),
            };
            if tally.admit("file", folder, &what) {
                let file = FileRecord {
                    op,
                    path,
                    to,
                    pid: Some(pid),
                    syscall: Some(syscall),
                    error,
                    unreadable,
                    aggregated: None,
                };
                crate::audit::jail_file_op(&log.sink, &log.of(), file);
            }
        }
    }
}

/// The summaries of the window that closed.
fn summarise(tally: &mut rate::Tally, log: &Log) {
    let window_ms = u64::try_from(rate::WINDOW.as_millis()).unwrap_or(u64::MAX);
    for (kind, key, counted) in tally.close() {
        let aggregated = Aggregated {
            count: counted.count,
            by: counted.by,
            window_ms,
        };
        if kind == "exec" {
            let exec = ExecRecord {
                path: key,
                argv: None,
                truncated: false,
                cwd: None,
                pid: None,
                ppid: None,
                uid: None,
                anonymous: false,
                error: None,
                unreadable: None,
                aggregated: Some(aggregated),
            };
            crate::audit::jail_exec(&log.sink, &log.of(), exec);
        } else {
            let file = FileRecord {
                op: "many",
                path: key,
                to: None,
                pid: None,
                syscall: None,
                error: None,
                unreadable: None,
                aggregated: Some(aggregated),
            };
            crate::audit::jail_file_op(&log.sink, &log.of(), file);
        }
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
