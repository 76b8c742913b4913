#![expect(clippy::unwrap_used, reason = "tests")]
use std::io::Write;
use std::sync::{Arc, Mutex};

use super::*;

/// A disk whose bytes the test can read; it can be made to hold each write until the test releases it,
/// or to fail its next write.
#[derive(Clone, Default)]
struct Out {
    bytes: Arc<Mutex<Vec<u8>>>,
    stuck: Option<Arc<Mutex<std::sync::mpsc::Receiver<()>>>>,
    fail_next: Arc<std::sync::atomic::AtomicBool>,
    /// How many writes have begun (a stuck one included).
    begun: Arc<std::sync::atomic::AtomicUsize>,
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.begun.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
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

impl Output for Out {}

fn text(out: &Out) -> String {
    String::from_utf8(out.bytes.lock().unwrap().clone()).unwrap()
}

fn lines(out: &Out) -> Vec<String> {
    text(out).lines().map(str::to_string).collect()
}

#[test]
fn a_lone_line_is_written_at_once_and_everything_queued_survives_the_stop() {
    let out = Out::default();
    let (queue, flusher) = start("audit-test", out.clone(), 16, Duration::from_millis(1), None, None).unwrap();
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
    let (queue, flusher) = start("audit-test", out.clone(), 1024, Duration::from_millis(200), None, None).unwrap();
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
    let (queue, flusher) = start("audit-test", out.clone(), 1, Duration::ZERO, None, None).unwrap();
    // One worker only: if the waiting request kept it, nothing else could run.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    // The writer is stuck on the first line and the second fills the queue: the third must wait. The second is
    // queued only once the writer is inside the first write, or it could join the first line's batch.
    queue.line(b"1\n".to_vec());
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while out.begun.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the writer never began the first write"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
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
fn a_failed_write_is_tried_again_and_nothing_is_lost_or_repeated() {
    let out = Out::default();
    out.fail_next.store(true, std::sync::atomic::Ordering::SeqCst);
    let (queue, flusher) = start("audit-test", out.clone(), 16, Duration::ZERO, None, None).unwrap();
    let health = || queue.health().unwrap().is_up();
    queue.line(b"first\n".to_vec());
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    // The first write fails: the output is down until the retry (250 ms later) succeeds.
    let mut saw_down = false;
    while text(&out).is_empty() {
        saw_down |= !health();
        assert!(std::time::Instant::now() < deadline, "the line was not written again");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(saw_down, "the failure was reported");
    // The writer says it is up once the write has returned, a moment after the bytes are there.
    while !health() {
        assert!(
            std::time::Instant::now() < deadline,
            "the success after it was not reported"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    queue.line(b"second\n".to_vec());
    drop(flusher);
    assert_eq!(text(&out), "first\nsecond\n");
}
