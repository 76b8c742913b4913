//! The audit thread: requests hand it finished JSON lines through a bounded queue, and it writes them out
//! in batches.
//!
//! After each batch the thread pauses for a moment before it looks at the queue again. While it pauses it
//! is not waiting on the queue, so a request that hands over a line wakes nobody: under load a batch of
//! records costs the requests no system call at all, and the thread one `write` per pause. A quiet proxy
//! has the thread parked on the queue, and a lone record is written the moment it arrives.
//!
//! Nothing is dropped: when the queue is full (the disk cannot keep up), requests wait for room. A
//! [`Flusher`] that is dropped writes out everything queued before it returns. When a write fails (a disk
//! that fails or fills), what it did not take is held ([`Unwritten`]) and tried again every 250 ms, and the
//! [`Health`] it reports makes the pipeline refuse requests (503 `audit_unavailable`) until a write succeeds.
//!
//! With a [`Chain`], the thread links every line into the hash chain as it writes it, starts with an
//! `audit_start` line, writes a checkpoint at each interval in which it wrote anything, and a final one when
//! it stops.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TrySendError};

use super::chain::{Chain, CheckpointSigner, Seal};
use super::health::Health;
use super::unwritten::Unwritten;

pub(crate) use super::output::Output;

/// Where finished audit lines go.
pub(crate) trait Lines: Send + Sync {
    /// Take one line (with its newline).
    fn line(&self, line: Vec<u8>);
    /// Whether lines can be written now, if the destination knows.
    fn health(&self) -> Option<&Health> {
        None
    }
}

enum Msg {
    Line(Vec<u8>),
    /// Sign checkpoints with this key from now on.
    Key(CheckpointSigner),
    /// Reopen the file (SIGUSR1, after an external logrotate).
    Reopen,
    /// Write out everything queued, then acknowledge and end.
    Stop(Sender<()>),
}

/// The requests' end of the queue.
#[derive(Clone)]
pub(crate) struct LineQueue {
    tx: Sender<Msg>,
    health: Arc<Health>,
}

impl Lines for LineQueue {
    fn health(&self) -> Option<&Health> {
        Some(&self.health)
    }

    fn line(&self, line: Vec<u8>) {
        let msg = match self.tx.try_send(Msg::Line(line)) {
            Ok(()) => return,
            Err(TrySendError::Full(msg)) => msg,
            // Only once the thread has ended, at shutdown, after its last flush.
            Err(TrySendError::Disconnected(_)) => {
                tracing::error!("audit record lost: the audit writer has stopped");
                return;
            }
        };
        // The queue is full: the disk is not keeping up, and this request waits for room. On a worker of
        // the multi-threaded runtime the wait is announced, so the worker's other tasks move to another
        // thread instead of waiting with it.
        let send = || self.tx.send(msg);
        let sent = match tokio::runtime::Handle::try_current() {
            Ok(rt) if rt.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(send)
            }
            _ => send(),
        };
        if sent.is_err() {
            tracing::error!("audit record lost: the audit writer has stopped");
        }
    }
}

impl LineQueue {
    /// Reopen the audit file at its path after the current batch (an external logrotate moved it away).
    pub(crate) fn reopen(&self) {
        let _ = self.tx.send(Msg::Reopen);
    }

    /// Sign the chain's checkpoints with `signer` from now on (its key is read once the secret sources are up).
    pub(crate) fn sign_with(&self, signer: CheckpointSigner) {
        if self.tx.send(Msg::Key(signer)).is_err() {
            tracing::error!("the audit writer has stopped; its checkpoints cannot be signed");
        }
    }
}

/// Stops the audit thread when dropped, after it has written out what is queued.
#[must_use = "dropping it stops the audit thread"]
pub(crate) struct Flusher {
    tx: Sender<Msg>,
    thread: Option<JoinHandle<()>>,
}

/// How soon the thread writes again after a write failed.
const RETRY: Duration = Duration::from_millis(250);

/// How long the thread waits at most, when cordon stops, for the queue to be written out.
const STOP_WAIT: Duration = Duration::from_secs(5);

impl Drop for Flusher {
    fn drop(&mut self) {
        let (ack_tx, ack_rx) = crossbeam_channel::bounded(1);
        if self.tx.send(Msg::Stop(ack_tx)).is_ok() {
            match ack_rx.recv_timeout(STOP_WAIT) {
                Ok(()) | Err(RecvTimeoutError::Disconnected) => {
                    if let Some(thread) = self.thread.take() {
                        let _ = thread.join();
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    tracing::error!("the audit writer did not finish within {STOP_WAIT:?}; records may be lost");
                }
            }
        }
    }
}

/// The chain a writer links its lines into, and how often it writes a checkpoint.
pub(crate) struct Chaining {
    pub(crate) chain: Chain,
    pub(crate) checkpoint_every: Duration,
    /// Whether the chain continues lines already in the file.
    pub(crate) continued: bool,
}

/// Start the thread `name`, writing to `out`, holding at most `queue` lines, pausing `pause` after each
/// batch; with `chaining`, every line is linked into its chain; with `spool`, every line is also appended to
/// the export spool.
pub(crate) fn start<W: Output + 'static>(
    name: &str,
    out: W,
    queue: usize,
    pause: Duration,
    chaining: Option<Chaining>,
    spool: Option<super::spool::SpoolWriter>,
) -> std::io::Result<(LineQueue, Flusher)> {
    let (tx, rx) = crossbeam_channel::bounded(queue);
    let health = Arc::new(Health::default());
    let thread_health = health.clone();
    let thread = std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || run(rx, out, pause, chaining, Unwritten::new(thread_health).tee(spool)))?;
    Ok((
        LineQueue { tx: tx.clone(), health },
        Flusher {
            tx,
            thread: Some(thread),
        },
    ))
}

fn run<W: Output>(rx: Receiver<Msg>, mut out: W, pause: Duration, mut chaining: Option<Chaining>, mut held: Unwritten) {
    if let Some(c) = &mut chaining {
        held.push(&c.chain.start_line(&crate::rfc3339::now_millis(), c.continued));
    }
    let mut last_checkpoint = std::time::Instant::now();
    let mut reopen = false;
    // Parked here while the proxy is quiet (until the next checkpoint is due, with a chain; until the next try
    // while the output fails). Every batch ends written out, and the queue cannot close before the `Stop` that
    // the flusher sends when dropped.
    loop {
        let mut wait = chaining
            .as_ref()
            .map(|c| c.checkpoint_every.saturating_sub(last_checkpoint.elapsed()));
        if held.waiting() {
            wait = Some(wait.map_or(RETRY, |w| w.min(RETRY)));
        }
        let first = match wait {
            Some(wait) => match rx.recv_timeout(wait) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            },
            None => match rx.recv() {
                Ok(m) => Some(m),
                Err(_) => return,
            },
        };
        let mut stop = None;
        let mut next = first;
        while let Some(msg) = next.take() {
            match msg {
                Msg::Line(line) => take(&mut held, &mut chaining, line),
                Msg::Key(signer) => {
                    if let Some(c) = &mut chaining {
                        c.chain.sign_with(signer);
                    }
                }
                Msg::Reopen => reopen = true,
                Msg::Stop(ack) => stop = Some(ack),
            }
            next = rx.try_recv().ok();
        }
        // No turning over while the output fails: the lines held belong to the file as it is.
        if stop.is_none() && !held.failing() && (reopen || out.rotation_due()) {
            match turn_over(&mut out, &mut chaining, &mut held, reopen) {
                Ok(()) => reopen = false,
                Err(e) => tracing::error!("cannot rotate or reopen the audit file: {e}"),
            }
            last_checkpoint = std::time::Instant::now();
        }
        if let Some(c) = &mut chaining
            && (stop.is_some() || last_checkpoint.elapsed() >= c.checkpoint_every)
        {
            let why = if stop.is_some() { Seal::Final } else { Seal::Due };
            if let Some(line) = c.chain.checkpoint_line(&crate::rfc3339::now_millis(), why) {
                held.push(&line);
            }
            last_checkpoint = std::time::Instant::now();
        }
        // A failure is reported by the health (once, and to every request); what was not written is tried again.
        let written = held.write_to(&mut out);
        if let Some(ack) = stop {
            if let Err(e) = written {
                tracing::error!(
                    "{} bytes of audit records could not be written when cordon stopped: {e}",
                    held.len()
                );
            }
            let _ = ack.send(());
            return;
        }
        std::thread::sleep(pause);
    }
}

/// Take one record's line: linked into the chain and held for the next write, or, while the output fails and
/// the thread holds all it may, dropped and counted; the first line taken after a drop is preceded by an
/// `audit_gap` line that says how many.
fn take(held: &mut Unwritten, chaining: &mut Option<Chaining>, mut line: Vec<u8>) {
    if !held.room() {
        return;
    }
    let dropped = held.take_dropped();
    if let Some(c) = chaining {
        if dropped > 0 {
            held.push(&c.chain.gap_line(&crate::rfc3339::now_millis(), dropped));
        }
        c.chain.link(&mut line);
    }
    held.push(&line);
}

/// Close the file with a checkpoint marked `rotated` (so a file that ends with it and has no successor shows the
/// successor was removed), set it aside (rotation) or let it go (an external logrotate moved it), and
/// start the next one with a line that continues the chain. Nothing turns over until what the old file should
/// hold is written.
fn turn_over<W: Output>(
    out: &mut W,
    chaining: &mut Option<Chaining>,
    held: &mut Unwritten,
    reopen: bool,
) -> std::io::Result<()> {
    if let Some(c) = chaining.as_mut()
        && let Some(line) = c.chain.checkpoint_line(&crate::rfc3339::now_millis(), Seal::Turn)
    {
        held.push(&line);
    }
    held.write_to(out)?;
    if reopen {
        out.reopen()?;
        tracing::info!("audit file reopened");
    } else if let Some(name) = out.rotate()? {
        tracing::info!(rotated_to = %name, "audit file rotated");
    }
    if let Some(c) = chaining.as_mut() {
        held.push(&c.chain.start_line(&crate::rfc3339::now_millis(), true));
    }
    Ok(())
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
