//! The notification listener: one dedicated connection per replica doing `LISTEN cordon`, reconnecting by
//! itself with backoff. Each notification becomes an [`Event`]; every (re)connection is followed by
//! [`Event::Resync`], so whatever was announced while the connection was down is re-read.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::poll_fn;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio_postgres::AsyncMessage;
use tokio_util::sync::CancellationToken;

use super::{CHANNEL, Db};
use crate::names::SandboxId;

/// How often the listening connection is checked with a query (a dead peer sends no FIN).
const PING_EVERY: Duration = Duration::from_secs(2);
/// The longest wait between reconnection attempts, before jitter.
const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// The waits between reconnection attempts: 100 ms doubling to [`MAX_BACKOFF`], with jitter, so the replicas
/// that lost the same server do not all reconnect in the same instant.
const BACKOFF: backon::ExponentialBuilder = backon::ExponentialBuilder::new()
    .with_min_delay(Duration::from_millis(100))
    .with_max_delay(MAX_BACKOFF)
    .with_jitter()
    .without_max_times();

/// What another replica (or this one) announced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// Re-read everything: the listener (re)connected and may have missed announcements.
    Resync,
    /// A sandbox record changed (created, renewed, revoked).
    Sandbox(SandboxId),
    /// A sandbox's CA was created or replaced.
    Ca(SandboxId),
    /// A pending approval was decided.
    Approval(String),
    /// A grant was made or withdrawn.
    Grant(String),
}

impl Event {
    /// The payload announcing this event.
    pub(crate) fn payload(&self) -> String {
        match self {
            Event::Resync => "resync".into(),
            Event::Sandbox(id) => format!("sandbox:{id}"),
            Event::Ca(id) => format!("ca:{id}"),
            Event::Approval(id) => format!("approval:{id}"),
            Event::Grant(id) => format!("grant:{id}"),
        }
    }

    /// The event a payload announces; `None` for one this cordon does not know (a newer replica's), or one
    /// naming a sandbox by something that is no sandbox id.
    pub(crate) fn parse(payload: &str) -> Option<Event> {
        let (kind, id) = payload.split_once(':').unwrap_or((payload, ""));
        let id = id.to_owned();
        match kind {
            "resync" => Some(Event::Resync),
            "sandbox" => SandboxId::parse(&id).ok().map(Event::Sandbox),
            "ca" => SandboxId::parse(&id).ok().map(Event::Ca),
            "approval" => Some(Event::Approval(id)),
            "grant" => Some(Event::Grant(id)),
            _ => None,
        }
    }
}

/// Announce `event` inside the transaction `tx` (delivered to every listener when it commits).
pub(crate) async fn announce(
    tx: &impl deadpool_postgres::GenericClient,
    event: &Event,
) -> Result<(), tokio_postgres::Error> {
    tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &event.payload()])
        .await
        .map(|_| ())
}

/// Listen until `stop`, sending events to `events`.
pub(crate) async fn run(db: Arc<Db>, events: UnboundedSender<Event>, stop: CancellationToken) {
    let mut backoff = backon::BackoffBuilder::build(&BACKOFF);
    loop {
        let started = tokio::time::Instant::now();
        let outcome = tokio::select! {
            _ = stop.cancelled() => return,
            r = session(&db, &events, &stop) => r,
        };
        match outcome {
            Ok(()) => return,
            Err(why) => {
                db.unavailable(format!("notifications: {why}"));
            }
        }
        // A session that held a while failed for a new reason: start the waits over.
        if started.elapsed() > MAX_BACKOFF {
            backoff = backon::BackoffBuilder::build(&BACKOFF);
        }
        let wait = backoff.next().unwrap_or(MAX_BACKOFF);
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

/// One connection's life: LISTEN, then forward notifications until it fails (`Err`) or `stop` (`Ok`).
async fn session(db: &Db, events: &UnboundedSender<Event>, stop: &CancellationToken) -> Result<(), String> {
    let (client, mut connection) = db.config.connect(db.tls.clone()).await.map_err(|e| e.to_string())?;
    let (notes, mut received) = unbounded_channel();
    let driver = tokio::spawn(async move {
        loop {
            match poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(n))) => {
                    if notes.send(n.payload().to_owned()).is_err() {
                        return "stopped".to_owned();
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return e.to_string(),
                None => return "the server closed the connection".to_owned(),
            }
        }
    });
    let _abort = AbortOnDrop(driver.abort_handle());
    client
        .batch_execute(&format!("LISTEN {CHANNEL}"))
        .await
        .map_err(|e| e.to_string())?;
    db.mark_up();
    // Listening first, then re-reading: nothing announced in between is missed.
    if events.send(Event::Resync).is_err() {
        return Ok(());
    }
    let mut ping = tokio::time::interval(PING_EVERY);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return Ok(()),
            note = received.recv() => match note {
                Some(payload) => {
                    if let Some(event) = Event::parse(&payload)
                        && events.send(event).is_err()
                    {
                        return Ok(());
                    }
                }
                None => return Err("the notification connection ended".to_owned()),
            },
            _ = ping.tick() => {
                match tokio::time::timeout(super::TIMEOUT, client.simple_query("SELECT 1")).await {
                    Ok(Ok(_)) => db.mark_up(),
                    Ok(Err(e)) => return Err(e.to_string()),
                    Err(_) => return Err("no answer to a ping".to_owned()),
                }
            }
        }
    }
}

/// Aborts the connection's driver when the session ends.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
