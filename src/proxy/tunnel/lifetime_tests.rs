#![expect(clippy::unwrap_used, reason = "tests")]
use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct Budget(AtomicU64, u64);

impl Meter for Budget {
    fn add(&self, up: u64, down: u64) -> bool {
        self.0.fetch_add(up + down, Ordering::Relaxed) + up + down <= self.1
    }
}

fn activity() -> Arc<Activity> {
    Activity::new(Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)))
}

#[tokio::test]
async fn bytes_are_counted_both_ways() {
    let (a, mut b) = tokio::io::duplex(1024);
    let act = activity();
    let mut w = Watched::new(a, act.clone(), None);
    w.write_all(b"hello").await.unwrap();
    b.write_all(b"abc").await.unwrap();
    let mut buf = [0u8; 3];
    w.read_exact(&mut buf).await.unwrap();
    assert_eq!(act.down.load(Ordering::Relaxed), 5);
    assert_eq!(act.up.load(Ordering::Relaxed), 3);
}

#[tokio::test]
async fn a_spent_budget_stops_the_stream() {
    let (a, mut b) = tokio::io::duplex(1024);
    let act = activity();
    let mut w = Watched::new(a, act.clone(), Some(Arc::new(Budget(AtomicU64::new(0), 8))));
    w.write_all(b"12345678").await.unwrap();
    assert!(w.write_all(b"9").await.is_err());
    assert!(act.over_budget());
    b.write_all(b"x").await.unwrap();
    let mut buf = [0u8; 1];
    assert!(w.read(&mut buf).await.is_err());
}

#[tokio::test(start_paused = true)]
async fn the_watchdog_ends_idle_and_old_tunnels() {
    let act = activity();
    assert_eq!(
        watchdog(act.clone(), Duration::from_secs(10), Duration::from_secs(3600)).await,
        TunnelEnd::Idle(Duration::from_secs(10))
    );
    let act = activity();
    let keep_busy = {
        let act = act.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                act.up.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        })
    };
    assert_eq!(
        watchdog(act, Duration::from_secs(10), Duration::from_secs(60)).await,
        TunnelEnd::MaxLifetime(Duration::from_secs(60))
    );
    keep_busy.abort();
}
