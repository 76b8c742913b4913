#![expect(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duty_that_panics_is_started_again_until_it_returns() {
    let runs = Arc::new(AtomicU32::new(0));
    let restarts = Arc::new(AtomicU32::new(0));
    let (r, c) = (runs.clone(), restarts.clone());
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let done = Arc::new(std::sync::Mutex::new(Some(done_tx)));
    forever(
        "test",
        move || {
            let r = r.clone();
            let done = done.clone();
            async move {
                // Panics on its first two runs, then does its work and returns.
                if r.fetch_add(1, Ordering::SeqCst) < 2 {
                    panic!("no thread could be started");
                }
                if let Some(tx) = done.lock().unwrap().take() {
                    let _ = tx.send(());
                }
            }
        },
        move |name| {
            assert_eq!(name, "test");
            c.fetch_add(1, Ordering::SeqCst);
        },
    );
    tokio::time::timeout(Duration::from_secs(5), done_rx)
        .await
        .expect("the duty was not started again")
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert_eq!(restarts.load(Ordering::SeqCst), 2);
}

#[test]
fn pauses_double_up_to_five_seconds() {
    assert_eq!(pause(1), Duration::from_millis(100));
    assert_eq!(pause(2), Duration::from_millis(200));
    assert_eq!(pause(4), Duration::from_millis(800));
    assert_eq!(pause(7), MAX_PAUSE);
    assert_eq!(pause(u32::MAX), MAX_PAUSE);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn blocking_work_runs_once_and_a_panic_in_it_is_none() {
    assert_eq!(blocking(|| 41 + 1).await, Some(42));
    let none: Option<()> = blocking(|| panic!("inside")).await;
    assert_eq!(none, None);
}
