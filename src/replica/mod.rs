//! This replica's part in a PostgreSQL store shared with other replicas: opening the store
//! ([`store::open`]), applying what the other replicas announce (`apply.rs`), the heartbeat that counts the
//! live replicas, learning a sandbox created elsewhere a moment ago ([`learn_sandbox`]), and flushing the
//! byte and credential budget counts every replica enforces on (`budgets.rs`). With a SQLite store (or none)
//! there is nothing to share and the control plane opens as it always did.
//!
//! The state these act on sits above this module: it is reached through [`Follower`], which names the few
//! things an announcement may change, held weakly so that every task here ends when the state is dropped.

use std::sync::Weak;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;

use crate::pg::listen::Event;
use crate::pg::replicas::HEARTBEAT;

mod apply;
pub(crate) mod budgets;
mod budgets_credential;
mod follower;
pub(crate) mod model_ledger;
mod store;

pub(crate) use apply::learn_sandbox;
pub(crate) use follower::Follower;
pub(crate) use store::{SharedStore, connect, open};

/// How often everything is re-read even without a missed notification (the safety net).
const RESYNC_EVERY: Duration = Duration::from_secs(30);

/// Start applying announcements (`events`, from [`store::StoreOpened::events`]), the heartbeat and the periodic re-read.
/// Each stops when `follower` is dropped.
pub(crate) fn start(follower: Weak<dyn Follower>, events: Option<UnboundedReceiver<Event>>) {
    let Some(events) = events else { return };
    tokio::spawn(apply_events(follower.clone(), events));
    tokio::spawn(heartbeat(follower));
}

async fn apply_events(follower: Weak<dyn Follower>, mut events: UnboundedReceiver<Event>) {
    let mut resync = tokio::time::interval(RESYNC_EVERY);
    resync.tick().await;
    loop {
        let event = tokio::select! {
            e = events.recv() => match e {
                Some(e) => e,
                None => return,
            },
            _ = resync.tick() => Event::Resync,
        };
        let Some(f) = follower.upgrade() else { return };
        if let Err(e) = apply::apply(&*f, &event).await {
            tracing::warn!(event = %event.payload(), "cannot apply an announcement from the shared store: {e}");
        }
    }
}

async fn heartbeat(follower: Weak<dyn Follower>) {
    loop {
        tokio::time::sleep(HEARTBEAT).await;
        let Some(f) = follower.upgrade() else { return };
        let Some(store) = f.store().cloned() else { return };
        match store.registry.beat().await {
            Ok(live) => f.set_replicas(live),
            Err(e) => tracing::debug!("heartbeat: {e}"),
        }
    }
}
