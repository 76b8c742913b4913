//! The audit thread: requests hand it finished JSON lines through a bounded queue, and it writes them out
//! in batches.
//!
//! After each batch the thread pauses for a moment before it looks at the queue again. While it pauses it
//! is not waiting on the queue, so a request that hands over a line wakes nobody: under load a batch of
//! records costs the requests no system call at all, and the thread one `write` per pause. A quiet proxy
//! has the thread parked on the queue, and a lone record is written the moment it arrives.
//!
//! Nothing is dropped: when the queue is full (the disk cannot keep up), requests wait for room. A
//! [`Flusher`] that is dropped writes out everything queued before it returns.

use std::io::Write;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TrySendError};

/// Where finished audit lines go.
pub(crate) trait Lines: Send + Sync {
    /// Take one line (with its newline).
    fn line(&self, line: Vec<u8>);
}

enum Msg {
    Line(Vec<u8>),
    /// Write out everything queued, then acknowledge and end.
    Stop(Sender<()>),
}

/// The requests' end of the queue.
#[derive(Clone)]
pub(crate) struct LineQueue {
    tx: Sender<Msg>,
}

impl Lines for LineQueue {
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

/// Stops the audit thread when dropped, after it has written out what is queued.
#[must_use = "dropping it stops the audit thread"]
pub(crate) struct Flusher {
    tx: Sender<Msg>,
    thread: Option<JoinHandle<()>>,
}

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

/// Start the thread `name`, writing to `out`, holding at most `queue` lines, pausing `pause` after each
/// batch.
pub(crate) fn start<W: Write + Send + 'static>(
    name: &str,
    out: W,
    queue: usize,
    pause: Duration,
) -> std::io::Result<(LineQueue, Flusher)> {
    let (tx, rx) = crossbeam_channel::bounded(queue);
    let thread = std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || run(rx, out, pause))?;
    Ok((
        LineQueue { tx: tx.clone() },
        Flusher {
            tx,
            thread: Some(thread),
        },
    ))
}

fn run<W: Write>(rx: Receiver<Msg>, mut out: W, pause: Duration) {
    // Parked here while the proxy is quiet. Every batch ends flushed, and the queue cannot close before the
    // `Stop` that the flusher sends when dropped.
    while let Ok(first) = rx.recv() {
        let mut stop = None;
        let mut next = Some(first);
        let mut failed = None;
        while let Some(msg) = next.take() {
            match msg {
                Msg::Line(line) => {
                    if let Err(e) = out.write_all(&line) {
                        failed = Some(e);
                    }
                }
                Msg::Stop(ack) => stop = Some(ack),
            }
            next = rx.try_recv().ok();
        }
        if let Err(e) = out.flush() {
            failed = Some(e);
        }
        if let Some(e) = failed {
            tracing::error!("audit records could not be written: {e}");
        }
        if let Some(ack) = stop {
            let _ = ack.send(());
            return;
        }
        std::thread::sleep(pause);
    }
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, reason = "tests")]
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A disk whose bytes the test can read; it can be made to hold each write until the test releases it,
    /// or to fail its next write.
    #[derive(Clone, Default)]
    struct Out {
        bytes: Arc<Mutex<Vec<u8>>>,
        stuck: Option<Arc<Mutex<std::sync::mpsc::Receiver<()>>>>,
        fail_next: Arc<std::sync::atomic::AtomicBool>,
    }

    impl Write for Out {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if let Some(stuck) = &self.stuck {
                let _ = stuck.lock().unwrap().recv();
            }
            if self.fail_next.swap(false, std::sync::atomic::Ordering::SeqCst) {
                return Err(std::io::Error::other("disk full"));
            }
            self.bytes.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn text(out: &Out) -> String {
        String::from_utf8(out.bytes.lock().unwrap().clone()).unwrap()
    }

    fn lines(out: &Out) -> Vec<String> {
        text(out).lines().map(str::to_string).collect()
    }

    #[test]
    fn a_lone_line_is_written_at_once_and_everything_queued_survives_the_stop() {
        let out = Out::default();
        let (queue, flusher) = start("audit-test", out.clone(), 16, Duration::from_millis(1)).unwrap();
        queue.line(b"first\n".to_vec());
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while lines(&out).is_empty() {
            assert!(std::time::Instant::now() < deadline, "a lone line was not written");
            std::thread::sleep(Duration::from_millis(1));
        }
        // More lines than the queue holds, from several threads: senders wait for room, none is lost.
        let senders: Vec<_> = (0..4)
            .map(|t| {
                let q = queue.clone();
                std::thread::spawn(move || {
                    for i in 0..100 {
                        q.line(format!("{t}-{i}\n").into_bytes());
                    }
                })
            })
            .collect();
        for s in senders {
            s.join().unwrap();
        }
        drop(flusher);
        let got = lines(&out);
        assert_eq!(got.len(), 401, "every line written by the time the flusher is gone");
        assert_eq!(got[0], "first");
        for t in 0..4 {
            let mine: Vec<&String> = got.iter().filter(|l| l.starts_with(&format!("{t}-"))).collect();
            let want: Vec<String> = (0..100).map(|i| format!("{t}-{i}")).collect();
            assert_eq!(
                mine,
                want.iter().collect::<Vec<_>>(),
                "one sender's lines stay in order"
            );
        }
    }

    #[test]
    fn lines_that_arrive_during_a_pause_go_out_with_the_next_batch() {
        let out = Out::default();
        let (queue, flusher) = start("audit-test", out.clone(), 1024, Duration::from_millis(200)).unwrap();
        queue.line(b"wake\n".to_vec());
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while lines(&out).is_empty() {
            assert!(std::time::Instant::now() < deadline, "a lone line was not written");
            std::thread::sleep(Duration::from_millis(1));
        }
        // The thread is pausing now: these pile up and go out in the next batch.
        for i in 0..50 {
            queue.line(format!("{i}\n").into_bytes());
        }
        drop(flusher);
        assert_eq!(lines(&out).len(), 51);
    }

    #[test]
    fn a_request_waiting_for_room_does_not_hold_up_the_other_tasks_of_its_worker() {
        // A disk that does not take anything until the test says so.
        let (release, stuck) = std::sync::mpsc::channel();
        let out = Out {
            stuck: Some(Arc::new(Mutex::new(stuck))),
            ..Out::default()
        };
        let (queue, flusher) = start("audit-test", out.clone(), 1, Duration::ZERO).unwrap();
        // One worker only: if the waiting request kept it, nothing else could run.
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        // The writer is stuck on the first line and the second fills the queue: the third must wait.
        queue.line(b"1\n".to_vec());
        queue.line(b"2\n".to_vec());
        let q = queue.clone();
        let waiting = rt.spawn(async move { q.line(b"3\n".to_vec()) });
        std::thread::sleep(Duration::from_millis(50));
        // Checked from this thread, not the runtime's: if the worker were stuck, so would be its timers.
        let (tx, rx) = std::sync::mpsc::channel();
        rt.spawn(async move { tx.send(42) });
        let answered = rx.recv_timeout(Duration::from_secs(5));
        let still_waiting = !waiting.is_finished();
        for _ in 0..3 {
            release.send(()).unwrap();
        }
        rt.block_on(waiting).unwrap();
        assert_eq!(answered, Ok(42), "another task ran while the request waited");
        assert!(still_waiting, "the request waited for room");
        drop(flusher);
        assert_eq!(text(&out), "1\n2\n3\n");
    }

    #[test]
    fn a_write_error_is_survived_and_later_lines_still_go_out() {
        let out = Out::default();
        out.fail_next.store(true, std::sync::atomic::Ordering::SeqCst);
        let (queue, flusher) = start("audit-test", out.clone(), 16, Duration::ZERO).unwrap();
        queue.line(b"lost\n".to_vec());
        std::thread::sleep(Duration::from_millis(50));
        queue.line(b"kept\n".to_vec());
        drop(flusher);
        assert_eq!(text(&out), "kept\n");
    }
}
